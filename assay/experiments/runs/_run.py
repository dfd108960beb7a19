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
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.errors import RunError
from assay.experiments.runs._background import Background
from assay.experiments.runs._lock import RunLock
from assay.experiments.runs._sidecar import Sidecar, SidecarError, SidecarGone, run_target
from assay.experiments.runs._store import RunStore, now
from assay.experiments.runs._tracking import (
    TrackedRun,
    check_tracking_uri,
    default_tracking_uri,
    log_tracked,
    prepare_store,
    tracked_json,
)
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
        tracking: Any = None,
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
        self.state: dict[str, Any] = {}
        self._store_ready: Any = None  # the MLflow store prepared in the background
        self.sidecar: Sidecar | None = None  # the reports lane: what offload / warm run in
        self.tracker: Sidecar | None = None  # the tracking lane: MLflow, loaded meanwhile
        # sidecar jobs held until the run's LM calls flow (see open's ``hold``); None: sent
        self._held: list[tuple[Sidecar, str, dict[str, Any], Any]] | None = None
        self._held_lock = threading.Lock()
        self._ledger = contextlib.ExitStack()  # calls.jsonl, recording while the run is open

    @classmethod
    def open(
        cls,
        config: Any,
        run_hash: str,
        *,
        command: str,
        workdir: Path,
        tracking_uri: str | None = None,
        resolved: dict[str, Any] | None = None,
        sidecar: bool = False,
        hold: bool = False,
        kind: str | None = None,
    ) -> Run:
        """The run of ``config`` (a :class:`~assay.experiments.RunConfig`): directory created,
        locked against a second writer, resolved config written on first open. An unfinished
        run starts its sidecars (where wanted: :func:`~._sidecar.wanted`): one that loads
        MLflow when it will log there, and one for its reports when ``sidecar`` asks for it (a
        runner that offloads its reports with :meth:`offload` and :meth:`warm`).

        ``hold``: the runner calls :meth:`calls_flowing` once its first LM call has ended; the
        sidecars' warm-ups (MLflow's store, the reports') wait for it. Before it, this process
        is still reading data and sending the first requests, and a sidecar loading MLflow or
        matplotlib on the other core slowed that (JRH suite: first request 2.3-2.7 s -> 2.3 s,
        wall -0.25 s).

        ``kind``: the registered runner the run belongs to (default ``command``), written in
        ``run.json``; its report builds the run's report.html."""
        tracking = getattr(config, "tracking", None)
        given = tracking_uri or getattr(tracking, "uri", None)
        if given and getattr(tracking, "enabled", True):
            # MLflow is imported here only for a URI the user gave (the default is assay's)
            field = "the tracking URI" if tracking_uri else "tracking.uri"
            check_tracking_uri(given, field)
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
            run.state = run.store.open(resolved or config.model_dump(mode="json"), kind or command)
            run._record_calls()
        except BaseException:
            run._ledger.close()
            run._lock.release()
            raise
        if not run.finished:
            run._held = [] if hold else None
            if sidecar:
                run.sidecar = Sidecar.start("reports")
            if run.tracking_enabled:
                run.tracker = Sidecar.start("tracking")
                run._prepare_tracking()
        return run

    def _prepare_tracking(self) -> None:
        """Import MLflow and create its store while the run works (the store of a new folder
        takes seconds): in the sidecar, or else a background thread; :meth:`log` joins it. A
        failure here is raised again by :meth:`log`, where it always surfaced."""
        where = self._mlflow_where
        if self.tracker is not None:
            self._send(
                self.tracker,
                "assay.experiments.runs._tracking:prepare_store",
                where,
                keep=lambda pending: setattr(self, "_store_ready", pending),
            )
        else:
            self._store_ready = Background(
                lambda: prepare_store(**where), name="assay-mlflow-store"
            )

    def offload(self, target: str, **kwargs: Any) -> Any:
        """``module:function(**kwargs)`` (JSON arguments and result) in the run's reports
        sidecar, after the warm-ups sent before it, or here when there is none."""
        if self.sidecar is not None:
            self.calls_flowing()  # warm-ups still held go first: the job may need them
            return self.sidecar.call(target, **kwargs)
        return run_target(target, kwargs)

    def warm(self, target: str, **kwargs: Any) -> None:
        """Queue ``target(**kwargs)`` in the reports sidecar ahead of the end of the run
        (loading what the end needs, computing what it will show); nothing without a sidecar.
        With ``hold``, sent once the calls flow."""
        if self.sidecar is not None:
            self._send(self.sidecar, target, kwargs)

    def _send(self, car: Sidecar, target: str, kwargs: dict[str, Any], keep: Any = None) -> None:
        """Submit a job to ``car`` now, or when the calls flow; ``keep(pending)`` on submit."""
        with self._held_lock:  # under the lock: a held job is never sent late or kept late
            if self._held is not None:
                self._held.append((car, target, kwargs, keep))
                return
            pending = car.submit(target, **kwargs)
            if keep is not None:
                keep(pending)

    def calls_flowing(self) -> None:
        """The run now waits on its LM calls: the held jobs go to their sidecars, in order.
        Called by a runner opened with ``hold`` (the harness from its first call's end —
        :class:`~._pool.CallSlots` ``after_first_call`` —, evaluate at its first judgment);
        the end of the run calls it too, for a run that made no call."""
        with self._held_lock:
            held, self._held = self._held or [], None
            for car, target, kwargs, keep in held:
                pending = car.submit(target, **kwargs)
                if keep is not None:
                    keep(pending)

    @property
    def _mlflow_where(self) -> dict[str, str]:
        """Where this run logs: the MLflow store, experiment and artifact root (JSON, for the
        sidecar)."""
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
        for car in (self.sidecar, self.tracker):
            if car is not None:
                car.close()
        self._ledger.close()
        self._lock.release()

    # -- what the calls cost ----------------------------------------------------------------
    def _record_calls(self) -> None:
        """Every LM call this process makes while the run is open goes to its call ledger."""
        from assay.lm import record_calls

        ledger = self.store.open_ledger()
        self._ledger.callback(ledger.close)
        self._ledger.enter_context(record_calls(ledger.write))

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
        store, logged here or in the sidecar (the run stays unfinished: fixed, a re-run logs
        it without LM calls).

        ``meanwhile`` writes ``tracked.late`` (the reports): with the tracking sidecar, MLflow
        logs the rest while it runs and those files once it has returned (the end of a run
        waits for the longer of the two, not both); otherwise it runs first. When it raises,
        the MLflow run it raced is marked FAILED and its error goes on; when MLflow fails
        first, it still runs before that error is raised."""
        if meanwhile is not None and (self.tracker is None or not self.tracking_enabled):
            meanwhile()
            meanwhile = None
        if not self.tracking_enabled:
            return None
        try:
            logging = self._log(tracked, wait=meanwhile is None)
        except Exception as exc:
            if meanwhile is not None:
                meanwhile()  # the reports are written whatever MLflow says
            raise self._log_error(exc) from exc
        if meanwhile is None:
            return logging
        try:
            meanwhile()
        except BaseException:
            with contextlib.suppress(Exception):  # best effort: the files' error is the news
                self.tracker.call(  # type: ignore[union-attr]
                    "assay.experiments.runs._tracking:mark_failed",
                    run_id=logging.result(),
                    tracking_uri=self.tracking_uri,
                )
            raise
        try:
            run_id = logging.result()
            self.tracker.call(  # type: ignore[union-attr]
                "assay.experiments.runs._tracking:log_late_json",
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
        """The run id; without ``wait`` (the tracking sidecar only), the pending job that
        returns it, with ``tracked.late`` left for :meth:`log` to add."""
        tracked.tags = {
            "assay.command": self.command,
            "assay.run_hash": self.run_hash,
            **tracked.tags,
        }
        if not tracked.artifacts:
            tracked.artifacts = [self.dir]
        self.calls_flowing()  # a run that made no LM call: its store is prepared now
        experiment_id = None
        if self._store_ready is not None:
            ready, self._store_ready = self._store_ready, None
            try:
                experiment_id = ready.join() if isinstance(ready, Background) else ready.result()
            except SidecarGone:
                pass  # prepared again below
        where = {**self._mlflow_where, "experiment_id": experiment_id}
        if self.tracker is not None:
            payload = tracked_json(tracked)
            target = "assay.experiments.runs._tracking:log_tracked_json"
            if wait:
                return self.tracker.call(target, run=payload, **where)
            return self.tracker.submit(target, run={**payload, "late": []}, **where)
        return log_tracked(tracked, **where)

    def finish(
        self,
        tracked: TrackedRun | None = None,
        meanwhile: Callable[[], None] | None = None,
        **state: Any,
    ) -> str | None:
        """Log to MLflow (if ``tracked``; ``meanwhile`` as in :meth:`log`) and mark the run
        finished; returns the MLflow run id."""
        if tracked is None and meanwhile is not None:
            meanwhile()
        run_id = self.log(tracked, meanwhile) if tracked is not None else None
        self.update(status="finished", finished=now(), mlflow_run_id=run_id, **state)
        return run_id
