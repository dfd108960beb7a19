"""Where a run's start-up and end work goes: the one door to the helper interpreters, the
warm-ups held until the first answer, and the background preloads.

A runner says *what* may overlap its LM calls; this module decides how:

    with Run.open(config, h, ..., reports_aside=True, after_first_answer=True) as run:
        scoring = run.preload("pkg.stats")         # needed at the end: imported meanwhile
        keys = run.meanwhile(lambda: index(items))  # the end's work on this process's data
        run.ahead("pkg.report:warm_up")              # the end needs it: done while calls run
        run.aside("pkg.web:remember", pairs=...)     # worth doing only away from the calls
        slots = run.call_slots(8)                     # the first call's end releases warm-ups
        ...
        run.at_end("pkg.report:write", run_dir=...)  # after every `ahead` job, in order

- ``reports_aside``: the runner's reports (matplotlib, word diffs, report.html) may be drawn in
  another interpreter while this one waits on the network and MLflow logs — the *reports*
  lane, one helper interpreter started when the run opens.
- MLflow is prepared (imported, its store created) while the run works: in the *tracking*
  lane's helper interpreter (the command line starts it before its own imports:
  :func:`command_started`), or else in a thread here.
- ``after_first_answer``: warm-ups (MLflow's store, the reports lane's jobs) wait until the
  runner's first LM call has ended (:meth:`Execution.calls_flowing`, called by the slots of
  :meth:`Execution.call_slots` or by the runner at its first result), so that they do not slow
  this process while it still reads data and sends the first requests.

Where the helper interpreters are wanted is ``ASSAY_SIDECAR`` (:func:`~._sidecar.wanted`);
without them every job runs here — ``ahead`` jobs in background threads, ``at_end`` after them
— and writes the same files.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

# light: the command line imports this module before anything heavy (see command_started)
from assay._files import sha256_file
from assay.runs._background import Background, preload
from assay.runs._sidecar import Sidecar, SidecarGone, run_target

if TYPE_CHECKING:
    from assay.runs._pool import CallSlots


class Execution:
    """A run's helper interpreters and background work, from the run's open to its close."""

    def __init__(self) -> None:
        self.reports: Sidecar | None = None  # the reports lane: ahead / aside / at_end
        self.tracker: Sidecar | None = None  # the tracking lane: MLflow, loaded meanwhile
        self._store_ready: Any = None  # the MLflow store prepared in the background
        # jobs held until the run's LM calls flow (``after_first_answer``); None: sent
        self._held: list[tuple[Sidecar, str, dict[str, Any], Any]] | None = None
        self._held_lock = threading.Lock()
        self._here: list[Background] = []  # ``ahead`` jobs run here, joined by ``at_end``

    def start(
        self,
        *,
        reports_aside: bool,
        after_first_answer: bool,
        tracking: bool,
        plugins: list[str] | None = None,
    ) -> None:
        """The helper interpreters the run wants (where wanted: :func:`~._sidecar.wanted`),
        each importing the run's ``plugins`` before its jobs."""
        self._held = [] if after_first_answer else None
        if reports_aside:
            self.reports = Sidecar.start("reports")
        if tracking:
            self.tracker = Sidecar.start("tracking")
        for car in (self.reports, self.tracker):
            if car is not None:
                car.plugins = list(plugins or [])

    # -- what a runner says ------------------------------------------------------------------
    def preload(self, module: str) -> Background:
        """``module`` imported in the background while the LM calls are in flight (what only
        the end of the run needs); ``join()`` returns the module."""
        return preload(module)

    def meanwhile(self, fn: Callable[[], Any]) -> Background:
        """``fn()`` in a background thread of this process while the LM calls are in flight
        (work the end needs, on objects a helper interpreter does not have); ``join()``
        returns its value."""
        return Background(fn, name="assay-meanwhile")

    def ahead(self, target: str, **kwargs: Any) -> None:
        """``module:function(**kwargs)`` (JSON arguments), which the end of the run needs, done
        while the calls run: in the reports lane (held until the calls flow, when asked), or
        else in a thread here; :meth:`at_end` runs after it."""
        if self.reports is not None:
            self._send(self.reports, target, kwargs)
        else:
            self._here.append(Background(lambda: run_target(target, kwargs), name="assay-ahead"))

    def aside(self, target: str, **kwargs: Any) -> bool:
        """``module:function(**kwargs)`` worth doing only away from this process's calls: in
        the reports lane when there is one (True); else nothing is done (False: the caller
        keeps the work for later)."""
        if self.reports is None:
            return False
        self._send(self.reports, target, kwargs)
        return True

    def at_end(self, target: str, **kwargs: Any) -> Any:
        """``module:function(**kwargs)`` (JSON arguments and result) after every job sent
        ahead: in the reports lane, or here."""
        if self.reports is not None:
            self.calls_flowing()  # warm-ups still held go first: the job may need them
            return self.reports.call(target, **kwargs)
        here, self._here = self._here, []
        for job in here:
            job.join()
        return run_target(target, kwargs)

    def call_slots(self, n: int) -> CallSlots:
        """At most ``n`` LM calls in flight; the first one's end is :meth:`calls_flowing`."""
        from assay.runs._pool import CallSlots  # tqdm: not on the command's way in

        return CallSlots(n, after_first_call=self.calls_flowing)

    def calls_flowing(self) -> None:
        """The run now waits on its LM calls: the held jobs go to their lanes, in order. The
        end of the run calls it too, for a run that made no call."""
        with self._held_lock:
            held, self._held = self._held or [], None
            for car, target, kwargs, keep in held:
                pending = car.submit(target, **kwargs)
                if keep is not None:
                    keep(pending)

    def _send(self, car: Sidecar, target: str, kwargs: dict[str, Any], keep: Any = None) -> None:
        """Submit a job to ``car`` now, or when the calls flow; ``keep(pending)`` on submit."""
        with self._held_lock:  # under the lock: a held job is never sent late or kept late
            if self._held is not None:
                self._held.append((car, target, kwargs, keep))
                return
            pending = car.submit(target, **kwargs)
            if keep is not None:
                keep(pending)

    # -- MLflow ------------------------------------------------------------------------------
    def prepare_tracking(self, where: dict[str, str]) -> None:
        """Import MLflow and create its store while the run works (the store of a new folder
        takes seconds): in the tracking lane, or else a background thread;
        :meth:`tracking_prepared` joins it."""
        if self.tracker is not None:
            self._send(
                self.tracker,
                "assay.runs._tracking:prepare_lane",
                where,
                keep=lambda pending: setattr(self, "_store_ready", pending),
            )
        else:
            from assay.runs._tracking import prepare_store  # dataclasses: not on
            # the command line's way to its helper interpreter (command_started)

            self._store_ready = Background(
                lambda: prepare_store(**where), name="assay-mlflow-store"
            )

    def tracking_prepared(self) -> str | None:
        """The experiment id :meth:`prepare_tracking` got (None: not prepared, or its helper
        exited first — the logging prepares it again). A failure there is raised here."""
        self.calls_flowing()  # a run that made no LM call: its store is prepared now
        if self._store_ready is None:
            return None
        ready, self._store_ready = self._store_ready, None
        try:
            return ready.join() if isinstance(ready, Background) else ready.result()
        except SidecarGone:
            return None

    def log_elsewhere(self) -> bool:
        """Whether MLflow logs from the tracking lane (while the reports are written here)."""
        return self.tracker is not None

    def track(self, target: str, *, wait: bool = True, **kwargs: Any) -> Any:
        """``target(**kwargs)`` in the tracking lane: its value, or without ``wait`` the
        pending job (``.result()``)."""
        assert self.tracker is not None
        if wait:
            return self.tracker.call(target, **kwargs)
        return self.tracker.submit(target, **kwargs)

    def close(self) -> None:
        cars = [car for car in (self.reports, self.tracker) if car is not None]
        for car in cars:  # both told at once, then waited for
            car.kill()
        for car in cars:
            car.close()


@contextlib.contextmanager
def command_started() -> Iterator[None]:
    """Around a command that opens a run: the tracking lane's helper interpreter, started
    before this process imports DSPy. It imports pandas (MLflow's first dependency) on the other
    core meanwhile, and reads the command's CSV table with it, so that this process needs
    neither on its way to the first LM call; then it loads MLflow while the run works."""
    Sidecar.prestart()
    car = Sidecar.spare()
    if car is None:
        yield
        return
    from assay.data import csv_read_by

    # pandas (~0.6 s) before it is asked; csv_rows alone of assay.data loads with the job
    car.submit("importlib:import_module", name="pandas")
    with csv_read_by(_ReadInHelper(car)):
        yield


class _ReadInHelper:
    """The command line's CSV reader (:func:`~assay.data.csv_read_by`): the tracking lane
    reads the table with pandas, which it imports anyway. Told ahead (``read_ahead``: the
    runner knows the table once its config is read, before its own imports), the lane reads it
    then, and the run's read takes those rows while the file holds the bytes they came from."""

    def __init__(self, car: Sidecar):
        self._car = car
        self._ahead: dict[str, Any] = {}

    def read_ahead(self, **where: Any) -> None:
        key = json.dumps(where, sort_keys=True)
        if key not in self._ahead:
            self._ahead[key] = self._car.submit("assay.data:csv_rows", **where)

    def __call__(self, **where: Any) -> Any:
        if "assay.lm" in sys.modules:  # the first LM call's price map, read while this waits
            from assay.lm import preload_price_map

            preload_price_map()
        ahead = self._ahead.pop(json.dumps(where, sort_keys=True), None)
        if ahead is not None:
            try:
                table = ahead.result()
            except Exception:  # read again below (a helper gone, a cell JSON cannot carry)
                table = None
            if table is not None and table["sha256"] == sha256_file(where["path"]):
                return table
        return self._car.call("assay.data:csv_rows", **where)
