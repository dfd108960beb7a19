"""The run lifecycle every runner shares: open the run directory (named from the config and a
hash of what determines its results), hold it against a second writer, keep its files, and log
it to MLflow once at the end with one flattener.

    with Run.open(config, run_hash, command="evaluate", workdir=workdir) as run:
        if run.finished: ...read back, no LM call...
        run.store.append(...)                    # as results finish
        run.finish(tracked=TrackedRun(...))      # metrics written, MLflow, state "finished"
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay import _signing
from assay.errors import RunError
from assay.runs._background import Background
from assay.runs._execution import Execution
from assay.runs._lock import RunLock
from assay.runs._plugins import run_identity
from assay.runs._seal import SEAL_TAG, SEALED, RunState, seal, seal_problem, seal_tag
from assay.runs._sidecar import SidecarError
from assay.runs._store import RunStore, now
from assay.runs._tracking import (
    TrackedRun,
    check_http_store,
    check_sqlite_store,
    check_tracking_uri,
    default_tracking_uri,
    log_tracked,
    tracked_json,
)

if TYPE_CHECKING:
    from assay.runs._pool import CallSlots
    from assay.runs._settings import RunSettings, TrackingSettings
from assay.types import Spend, Usage


def run_directory(workdir: Path, output_dir: str, name: str, run_hash: str) -> Path:
    """``<workdir>/<output_dir>/<name>-<hash[:10]>``; refuses an ``output_dir`` that is (or lies
    under) a file."""
    root = (workdir / output_dir).resolve()
    for folder in (root, *root.parents):
        if folder.exists():
            if not folder.is_dir():
                raise RunError(f"{folder}: output_dir is a file, not a directory")
            break
    return root / f"{name}-{run_hash[:10]}"


_log = logging.getLogger(__name__)

SETTLE_S = 10.0
"""How long a run's close waits for the LM calls it left in flight (stopped by Ctrl-C, a
deadline or a bug): their answers are paid, and noted in its ledger as they come; one still in
flight then is noted as abandoned, and its answer kept in no LM cache (a second Ctrl-C stops
the wait)."""


class Run:
    """One run directory from open to finish. Use :meth:`open` as a context manager."""

    def __init__(
        self,
        *,
        command: str,
        name: str,
        run_hash: str,
        workdir: Path,
        output_dir: str = "runs",
        tracking: TrackingSettings | None = None,
        tracking_uri: str | None = None,
    ):
        self.command = command
        self.name = name
        self.run_hash = run_hash
        self.workdir = workdir
        self.dir = run_directory(workdir, output_dir, name, run_hash)
        self.store = RunStore(self.dir, run_hash)
        self.tracking = tracking
        self.tracking_uri = (
            tracking_uri
            or (getattr(tracking, "uri", None) if tracking is not None else None)
            or default_tracking_uri(workdir)
        )
        self._lock = RunLock(self.dir)
        self.state: RunState = {}
        self.execution = Execution()  # helper interpreters, warm-ups, preloads (_execution.py)
        # why a finished run was opened as unfinished (its seal no longer holds; "code": other
        # code made its figures); None: it was not (_reopen_if_unsealed)
        self.reopened: str | None = None
        self._ledger = contextlib.ExitStack()  # calls.jsonl, recording while the run is open

    @classmethod
    def open(
        cls,
        config: RunSettings,
        run_hash: str,
        *,
        command: str,
        workdir: Path,
        tracking_uri: str | None = None,
        resolved: dict[str, Any] | None = None,
        reports_aside: bool = False,
        after_first_answer: bool = False,
        kind: str | None = None,
        rebuild_unsealed: bool = True,
    ) -> Run:
        """The run of ``config`` (an :class:`~assay.inputs.RunConfig`): directory created,
        locked against a second writer, resolved config written on first open. An unfinished
        run starts what may overlap its LM calls (:class:`~._execution.Execution`): MLflow
        prepared meanwhile when it will log there, and, with ``reports_aside``, its reports
        drawn away from the calls (:meth:`ahead`, :meth:`aside`, :meth:`at_end`).

        ``after_first_answer``: the runner's first LM call ends before any warm-up starts
        (:meth:`call_slots` says when, or the runner with :meth:`calls_flowing`). Before it,
        this process is still reading data and sending the first requests, which loading MLflow
        or matplotlib on the other core would slow (docs/performance.md has the figures).

        ``kind``: the registered runner the run belongs to (default ``command``), written in
        ``run.json``; its report builds the run's report.html.

        ``rebuild_unsealed``: a finished run whose seal no longer holds is opened as unfinished,
        its figures made again from its signed records (:meth:`_reopen_if_unsealed`); False,
        for a run whose results its records cannot make again (an optimizer's compile), it is
        refused in one line instead, and left as it is.

        The config's plug-ins are part of the run's identity: ``run_hash`` with theirs
        (:func:`~._plugins.run_identity`) names the directory and is ``run.run_hash``."""
        run_hash = run_identity(config, run_hash)
        tracking = getattr(config, "tracking", None)
        given = tracking_uri or getattr(tracking, "uri", None)
        if given and getattr(tracking, "enabled", True):
            # MLflow is imported here only for a URI the user gave (the default is assay's)
            field = "the tracking URI" if tracking_uri else "tracking.uri"
            check_tracking_uri(given, field)
        if getattr(tracking, "enabled", True):  # the store, before any LM call
            uri = given or default_tracking_uri(Path(workdir or "."))
            check_sqlite_store(uri, field if given else "the tracking store")
            check_http_store(uri, field if given else "the tracking store")
        run = cls(
            command=command,
            name=config.name,
            run_hash=run_hash,
            workdir=workdir,
            output_dir=config.output_dir,
            tracking=config.tracking,
            tracking_uri=tracking_uri,
        )
        try:
            run.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunError(f"{run.dir}: cannot create the run directory ({exc.strerror})") from None
        run._lock.acquire()
        try:
            resolved = resolved or config.model_dump(mode="json")
            run.state = run.store.open(resolved, kind or command)
            run._refuse_unbound_records()
            run._reopen_if_unsealed(resolved, rebuild=rebuild_unsealed)
            run._record_calls()
        except BaseException:
            run._ledger.close()
            run._lock.release()
            raise
        if not run.finished:
            try:  # the seal at the finish signs: a key that cannot be had stops it before a call
                _signing.ensure_key()
            except BaseException:
                run.close()
                raise
            run.execution.start(
                reports_aside=reports_aside,
                after_first_answer=after_first_answer,
                tracking=run.tracking_enabled,
                plugins=getattr(config, "plugins", None),
            )
            if run.tracking_enabled:  # a failure here is raised again by log, not by open
                run.execution.prepare_tracking(run._mlflow_where)
        return run

    # -- what may overlap the LM calls (the runner says what; _execution.py says how) --------
    def preload(self, module: str) -> Background:
        """``module`` imported while the calls run (what only the end needs); ``join()``."""
        return self.execution.preload(module)

    def meanwhile(self, fn: Callable[[], Any]) -> Background:
        """``fn()`` in a background thread while the LM calls are in flight — work only the end
        of the run needs, too slow for the way to the first request; ``join()`` returns its
        value (or raises its error)."""
        return self.execution.meanwhile(fn)

    def ahead(self, target: str, **kwargs: Any) -> None:
        """``module:function(**kwargs)`` the end of the run needs, done while the calls run
        (before :meth:`at_end`): away from them with ``reports_aside``, else in a thread."""
        self.execution.ahead(target, **kwargs)

    def aside(self, target: str, **kwargs: Any) -> bool:
        """``module:function(**kwargs)`` done away from the calls, if the run can (True);
        False: not done, the caller keeps it for later."""
        return self.execution.aside(target, **kwargs)

    def at_end(self, target: str, **kwargs: Any) -> Any:
        """``module:function(**kwargs)`` (JSON arguments and result) after every job sent
        :meth:`ahead` — where the reports are drawn."""
        return self.execution.at_end(target, **kwargs)

    def call_slots(self, n: int) -> CallSlots:
        """The run's LM-call slots (at most ``n`` in flight); the first call's end is
        :meth:`calls_flowing`."""
        return self.execution.call_slots(n)

    def calls_flowing(self) -> None:
        """The run now waits on its LM calls (a runner opened ``after_first_answer`` says so
        at its first answer, or through :meth:`call_slots`): the warm-ups start. The end of the
        run calls it too, for a run that made no call."""
        self.execution.calls_flowing()

    @property
    def _mlflow_where(self) -> dict[str, str]:
        """Where this run logs: the MLflow store, experiment and artifact root (JSON, for a
        helper interpreter)."""
        return {
            "tracking_uri": self.tracking_uri,
            "experiment": self.experiment,
            "artifact_root": str(self.workdir / "mlartifacts"),
        }

    @property
    def experiment(self) -> str:
        return getattr(self.tracking, "experiment", "assay") if self.tracking else "assay"

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.execution.close()
        self._ledger.close()
        self._lock.release()

    # -- what the calls cost ----------------------------------------------------------------
    def _record_calls(self) -> None:
        """Every LM call this process makes while the run is open goes to its call ledger;
        the calls in flight when it closes are waited for (:data:`SETTLE_S` at most)."""
        from assay.lm import record_calls

        ledger = self.store.open_ledger()
        self._ledger.callback(ledger.close)
        self._ledger.enter_context(record_calls(ledger.write, settle_s=SETTLE_S))

    def spend(self, used: Usage) -> Spend | None:
        """What the run's calls cost as the server answered them (its ledger, across every
        process that worked on it), beside ``used``: the usage its results carry."""
        from assay.lm import ledger_usage

        paid, failed = ledger_usage(self.store.calls())
        return Spend.of(paid, used, failed)

    # -- state ------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.state.get("status") == "finished"

    def _refuse_unbound_records(self) -> None:
        """A run created before runs had an instance signed its records over its hash alone:
        another run of the same config could have written them. It is read as it sealed them —
        read back, decided on, its sealed judgments scored again by newer code — but records
        its seal does not vouch for (a run not finished, or whose seal no longer holds) are
        neither resumed nor scored again: refused in one line."""
        if self.state.get("instance") is not None:
            return
        problem = seal_problem(self.dir, self.state)
        if problem is not None:
            why = problem[0] if self.finished or "seal" in self.state else "it did not finish"
            raise RunError(
                f"{self.dir}: created before runs had an instance, and {why}: its "
                "records cannot be told from another run's of this config; move it aside and "
                "run its config again (the LM cache answers what it asked before)"
            )

    def _reopen_if_unsealed(self, resolved: dict[str, Any], *, rebuild: bool = True) -> None:
        """A finished run whose files are no longer the ones it sealed (a file edited since, a
        seal not signed by the key, a run finished before seals) is not shown as it is: said in
        a warning, it is opened as unfinished — its ``config.yaml`` written again from this
        command's config (``resolved``), its figures made again from its records (each judgment
        signed: one edited is refused as it is read), and sealed anew at its finish. A run
        killed after work was added to it once finished (``--retry-unscored``) is one: its
        ``metrics.json`` did not count that work. So is a run whose figures other code made
        (assay upgraded or edited since, another DSPy or pydantic, other installed plug-ins):
        a fix to a figure reaches the runs that finished before it.

        A run that goes on — unfinished, or opened so here — is refused first, in one line, when
        records its heads beside the key count were removed from its files
        (:meth:`~._store.RunStore.check_records`): they would be judged again, a new draw in
        place of the one removed."""
        if not self.finished:
            self.store.check_records()
            return
        heads = self.store.recorded_heads()
        if heads is not None and heads.pending:  # work added once it finished, then a kill
            self.store.check_records()
        problem = seal_problem(self.dir, self.state)
        self.reopened = "seal" if problem is not None else None
        if problem is not None and not rebuild:
            raise RunError(
                f"{self.dir}: {problem[0]}: its results cannot be made again from its records; "
                "move it aside and run its config again (the LM cache answers what it asked "
                "before)"
            )
        if problem is None:
            from assay.runs._reread import code_digest

            if self.state.get("code") == code_digest():
                return
            self.reopened = "code"
            problem = (
                "its figures were made by other code (assay, DSPy, pydantic or the "
                "installed plug-ins changed since it finished)",
                "",
            )
        self.store.check_records()  # before anything is written
        _log.warning(
            "%s: %s: its figures are made again from its records, not read back",
            self.dir,
            problem[0],
        )
        self.store.write_config(resolved)
        self.update(status="running")

    @property
    def mlflow_run_id(self) -> str | None:
        return self.state.get("mlflow_run_id")

    @property
    def tracking_enabled(self) -> bool:
        return self.tracking is None or bool(getattr(self.tracking, "enabled", True))

    def update(self, **changes: Any) -> None:
        self.state.update(changes)
        self.store.update_state(**changes)

    # -- the end ----------------------------------------------------------------------------
    def log(self, tracked: TrackedRun, meanwhile: Callable[[], None] | None = None) -> str | None:
        """Log ``tracked`` to MLflow (when tracking is enabled); returns the MLflow run id.

        ``assay.command`` and ``assay.run_hash`` tags are added; the run directory is its
        artifacts unless ``tracked.artifacts`` says otherwise. A failure is one line naming the
        store, logged here or in the tracking lane (the run stays unfinished: fixed, a re-run
        logs it without LM calls).

        ``meanwhile`` writes ``tracked.late`` (the reports): with the tracking lane, MLflow
        logs the rest while it runs and those files once it has returned (the end of a run
        waits for the longer of the two, not both); otherwise it runs first. When it raises,
        the MLflow run it raced is marked FAILED and its error goes on; when MLflow fails
        first, it still runs before that error is raised."""
        elsewhere = self.execution.log_elsewhere()
        if meanwhile is not None and (not elsewhere or not self.tracking_enabled):
            meanwhile()
            meanwhile = None
        if not self.tracking_enabled:
            return None
        # the reports start now, not once the tracking lane has its store (MLflow's import
        # there may still be going on): the end of the run is the longer of the two
        reports = None if meanwhile is None else Background(meanwhile, delay=0, name="assay-end")
        try:
            logging = self._log(tracked, wait=reports is None)
        except Exception as exc:
            if reports is not None:
                reports.join()  # the reports are written whatever MLflow says
            raise self._log_error(exc) from exc
        if reports is None:
            return logging
        try:
            reports.join()
        except BaseException:
            with contextlib.suppress(Exception):  # best effort: the files' error is the news
                self.execution.track(
                    "assay.runs._tracking:mark_failed",
                    run_id=logging.result(),
                    tracking_uri=self.tracking_uri,
                )
            raise
        try:
            run_id = logging.result()
            self.execution.track(
                "assay.runs._tracking:log_late_json",
                run_id=run_id,
                paths=[str(p) for p in tracked.late],
                tracking_uri=self.tracking_uri,
            )
        except Exception as exc:
            raise self._log_error(exc) from exc
        return run_id

    def _log_error(self, exc: Exception) -> RunError:
        what = str(exc) if isinstance(exc, SidecarError) else f"{type(exc).__name__}: {exc}"
        # one line: SQLAlchemy appends the statement and a link on lines of their own
        first = next((line for line in what.splitlines() if line.strip()), what)
        return RunError(f"MLflow at {self.tracking_uri}: {first.strip()}")

    def _log(self, tracked: TrackedRun, *, wait: bool = True) -> Any:
        """The run id; without ``wait`` (the tracking lane only), the pending job that
        returns it, with ``tracked.late`` left for :meth:`log` to add."""
        tracked.tags = {
            "assay.command": self.command,
            "assay.run_hash": self.run_hash,
            **tracked.tags,
        }
        if not tracked.artifacts:
            tracked.artifacts = [self.dir]
        experiment_id = self.execution.tracking_prepared()  # None: prepared again below
        where = {**self._mlflow_where, "experiment_id": experiment_id}
        if self.execution.log_elsewhere():
            payload = tracked_json(tracked)
            target = "assay.runs._tracking:log_tracked_json"
            if wait:
                return self.execution.track(target, run=payload, **where)
            return self.execution.track(target, wait=False, run={**payload, "late": []}, **where)
        return log_tracked(tracked, **where)

    def log_finished(self, tracked: Callable[[], TrackedRun]) -> str | None:
        """A finished run found again by a call that logs, which was never logged (a first call
        with tracking off): ``tracked()`` logged now, with its seal's tag, and its MLflow run
        id recorded, so a later call finds it logged and logs nothing; returns the run id (the
        one recorded, when it was logged before or tracking is off)."""
        if not self.finished or not self.tracking_enabled or self.mlflow_run_id is not None:
            return self.mlflow_run_id
        run = tracked()
        run.tags = {**run.tags, SEAL_TAG: seal_tag(self.state["seal"])}
        run_id = self.log(run)
        self.update(mlflow_run_id=run_id)
        return run_id

    def seal_results(self, sealed: Sequence[str] = SEALED) -> None:
        """Seal the files a decision or a re-read reads (``sealed``: names or globs in the run
        directory): their digests, signed, in ``run.json``."""
        from assay.runs._reread import code_digest

        kind = self.state.get("kind", self.command)
        instance = self.state.get("instance")
        self.store.settle_records()
        sealed_now = seal(self.dir, sealed, kind=kind, run_hash=self.run_hash, instance=instance)
        self.update(seal=sealed_now, code=code_digest())

    def finish(
        self,
        tracked: TrackedRun | None = None,
        meanwhile: Callable[[], None] | None = None,
        *,
        sealed: Sequence[str] = SEALED,
        **state: Any,
    ) -> str | None:
        """Seal the files a decision reads (``sealed``: names or globs in the run directory;
        the seal in ``run.json`` and on the MLflow run), log to MLflow (if ``tracked``;
        ``meanwhile`` as in :meth:`log`) and mark the run finished; returns the MLflow run id."""
        self.seal_results(sealed)
        if tracked is not None:
            tracked.tags = {**tracked.tags, SEAL_TAG: seal_tag(self.state["seal"])}
        if tracked is None and meanwhile is not None:
            meanwhile()
        run_id = self.log(tracked, meanwhile) if tracked is not None else None
        self.update(status="finished", finished=now(), mlflow_run_id=run_id, **state)
        return run_id
