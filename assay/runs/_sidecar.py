"""The end of a run in a helper interpreter, loaded while the LM calls are in flight.

The end of a run needs MLflow (seconds to import and to open a new store), matplotlib and the
report page. Loaded in this process, that is pure-Python work under the GIL the LM calls of the
run need (measured: a harness run's LM traffic stalled for ~1 s while MLflow loaded in a
thread). The sidecar is a second interpreter, started when the run opens: it loads them on
another core while this process drives the calls, then runs the jobs the end of the run sends
it — the report, report.html, the MLflow run.

    sidecar = Sidecar.start()                       # None when not wanted (see :func:`wanted`)
    ready = sidecar.submit("pkg.mod:prepare", x=1)  # queued; the child runs jobs in order
    sidecar.call("pkg.mod:log", run=...)            # waits for the reply
    sidecar.close()

Jobs are ``module:function`` with JSON keyword arguments and a JSON result; each carries the
plug-ins of the run that took the sidecar (its config's ``plugins``), which the child imports
before it runs the job, so a plug-in's test, scoring kind, judge kind or function is known there
as here (one that fails to import there is the job's error). It carries this process's
``sys.path`` too, which the child adds to its own before it imports them: a module plug-in
this process finds through a folder it put on ``sys.path`` (a notebook's, a script's) is found
there as well — the child's own ``sys.path`` is the environment's, and the plug-in would fail
only at the end of the run, after its LM calls. An error in a job
is raised here as :class:`SidecarError` with its message. A sidecar that died (or never
started) is not an error: :meth:`Sidecar.call` then runs the job in this process, so the work
is done either way. The child exits when its stdin closes — when this process ends, however it
ends — and is in a session of its own, so a Ctrl-C in the terminal reaches this process only.

A run may have two, one per *lane*: ``tracking`` (MLflow: seconds of imports and store set-up)
and ``reports`` (matplotlib, the word diffs, report.md and report.html). In one interpreter they
queued behind each other and the last of them ended seconds after the last LM answer; in two,
they use both cores while this process mostly waits on the network.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from assay._registry import load_plugins
from assay.errors import RunError

# niced: what it loads while the run works takes the cycles this process (and, on one machine,
# the model server) leaves idle; at the end of the run, nothing else wants them
_BOOT = (
    "import json, os, sys; sys.argv = json.loads(sys.argv[1]); "
    "hasattr(os, 'nice') and os.nice(10); "
    "from assay.runs._sidecar import serve; serve()"
)


LANES = ("tracking", "reports")
"""What a sidecar is for: MLflow (prepare the store, log the run), or the run's reports."""

_spare: Sidecar | None = None  # the tracking lane's, started by prestart(), not yet taken


class SidecarError(RunError):
    """A job failed in the sidecar (its exception's type and message)."""


class SidecarGone(Exception):
    """The sidecar exited before it answered: the caller does the job itself."""


def wanted() -> bool:
    """``ASSAY_SIDECAR``: ``1`` always, ``0`` never; by default, when this process has not
    loaded MLflow yet (a command line). A process that has (a notebook, a test suite, a second
    run) pays nothing more to end its runs itself."""
    flag = os.environ.get("ASSAY_SIDECAR", "").strip().lower()
    if flag in ("1", "true", "yes", "on"):
        return True
    if flag in ("0", "false", "no", "off"):
        return False
    return "mlflow" not in sys.modules


def run_target(target: str, kwargs: dict[str, Any]) -> Any:
    """``module:function(**kwargs)`` — in the sidecar, or here when there is none."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(**kwargs)


class Pending:
    """The reply to one job, when it comes."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._reply: dict[str, Any] = {}

    def resolve(self, reply: dict[str, Any]) -> None:
        self._reply = reply
        self._done.set()

    def result(self) -> Any:
        """The job's value; :class:`SidecarError` if it failed, :class:`SidecarGone` if the
        sidecar exited first."""
        self._done.wait()
        if "gone" in self._reply:
            raise SidecarGone(self._reply["gone"])
        if "error" in self._reply:
            raise SidecarError(self._reply["error"])
        return self._reply.get("value")


class Sidecar:
    """One helper interpreter; see the module's docstring."""

    def __init__(self, proc: subprocess.Popen):
        self._proc = proc
        self._lock = threading.Lock()
        self._pending: dict[int, Pending] = {}
        self._next = 0
        self._gone: str | None = None
        self._closed = False
        self.plugins: list[str] = []  # the run's (set by the run that takes it): every job's
        # jobs are written by a thread of their own: a child busy loading fills the pipe,
        # and a caller (a pool worker committing a unit) must not wait for it
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, name="assay-sidecar-in", daemon=True)
        self._reader = threading.Thread(target=self._read, name="assay-sidecar", daemon=True)
        self._writer.start()
        self._reader.start()

    @classmethod
    def prestart(cls) -> None:
        """Start the tracking lane's sidecar now, for the run a command is about to open (the
        command line calls this before its own imports); :meth:`start` hands it over, and one no
        run took is ended when the process exits. It loads only what the command asks of it
        until the run's first LM answer: loading MLflow beside this process's own imports would
        slow them, and the first request with them (docs/performance.md has the figures). (A
        harness's reports sidecar waits for that answer anyway, so it is started when its run
        opens: a zero-call re-run starts one interpreter, not two.)"""
        global _spare
        if _spare is None and (car := cls._spawn()) is not None:
            atexit.register(car.close)
            _spare = car

    @classmethod
    def spare(cls) -> Sidecar | None:
        """The sidecar :meth:`prestart` made, not yet taken by a run (or None)."""
        return _spare

    @classmethod
    def start(cls, lane: str = "tracking") -> Sidecar | None:
        """A sidecar running this checkout of assay for ``lane`` (for tracking, the one
        :meth:`prestart` made, if any), or None when not wanted or it cannot start."""
        global _spare
        if lane not in LANES:
            raise ValueError(f"unknown sidecar lane {lane!r}; lanes: {', '.join(LANES)}")
        if lane == "tracking" and _spare is not None:
            car, _spare = _spare, None
            return car
        return cls._spawn()

    @classmethod
    def _spawn(cls) -> Sidecar | None:
        if not wanted():
            return None
        root = str(Path(__file__).resolve().parents[3])
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(sys.argv)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError:
            return None
        return cls(proc)

    def submit(self, target: str, **kwargs: Any) -> Pending:
        """Queue ``target(**kwargs)``; the child runs jobs in the order they were submitted,
        each once it has imported the run's plug-ins."""
        pending = Pending()
        job = {
            "target": target,
            "kwargs": kwargs,
            "plugins": self.plugins,
            "path": [p for p in sys.path if isinstance(p, str)],
        }
        line = json.dumps(job, default=str)
        with self._lock:
            if self._gone is not None:
                pending.resolve({"gone": self._gone})
                return pending
            job_id, self._next = self._next, self._next + 1
            self._pending[job_id] = pending
        self._outbox.put((json.dumps({"id": job_id}) + "\t" + line + "\n").encode())
        return pending

    def call(self, target: str, **kwargs: Any) -> Any:
        """``target(**kwargs)`` in the sidecar, or here if the sidecar is gone."""
        try:
            return self.submit(target, **kwargs).result()
        except SidecarGone:
            return run_target(target, kwargs)

    def _write(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            while (data := self._outbox.get()) is not None:
                stdin.write(data)
                stdin.flush()
            stdin.close()
        except (OSError, ValueError):
            pass  # the child is gone: the reader fails what is pending

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            try:
                reply = json.loads(raw)
            except ValueError:
                continue
            with self._lock:
                pending = self._pending.pop(reply.pop("id", -1), None)
            if pending is not None:
                pending.resolve(reply)
        code = self._proc.wait()
        with self._lock:
            self._gone = f"the helper process exited (code {code})"
            left, self._pending = list(self._pending.values()), {}
        for pending in left:
            pending.resolve({"gone": self._gone})

    def kill(self) -> None:
        """End the child at once without waiting for it to be gone (:meth:`close` waits): the
        kernel takes ~20 ms to free a helper's memory, and two helpers ended one after the other
        wait for each other."""
        with contextlib.suppress(OSError):
            self._proc.kill()

    def close(self) -> None:
        """End the child at once: a job still queued has nobody waiting for it, and with none
        queued the child has nothing left to do but exit, as it would on its closed input
        (``os._exit``, no teardown) — yet a niced child on busy cores can wait a while for the
        core to do even that (0.2-0.3 s of a zero-call re-run, measured). Closing twice does
        nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._outbox.put(None)
        try:
            self._proc.kill()
        except OSError:
            pass
        self._proc.wait()
        self._writer.join(timeout=5)
        self._reader.join(timeout=5)


def serve() -> None:
    """The child's loop: one job per line of stdin, one reply per line on the original stdout
    (anything a job prints goes to stderr instead), until stdin closes. Then it exits at once:
    every job has answered, and an interpreter holding MLflow, SQLAlchemy and matplotlib
    takes over a second to shut down, which the command would wait for."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    if "IPython" not in sys.modules:
        sys.modules["IPython"] = None  # type: ignore[assignment]  # as the command line does
    for raw in sys.stdin.buffer:
        head, _, body = raw.decode("utf-8").partition("\t")
        job_id = json.loads(head)["id"]
        job = json.loads(body)
        try:
            _extend_path(job.get("path", ()))
            load_plugins(job.get("plugins", ()))
            value = run_target(job["target"], job["kwargs"])
            line = json.dumps({"id": job_id, "value": value}, default=str)  # once: a table
        except BaseException as exc:  # reported to the caller, which raises it
            line = json.dumps({"id": job_id, "error": f"{type(exc).__name__}: {exc}"})
        try:
            replies.write(line + "\n")
        except OSError:  # the command is gone (killed, interrupted): nobody reads the replies
            os._exit(0)
    replies.flush()
    sys.stderr.flush()
    os._exit(0)


def _extend_path(caller: list[str]) -> None:
    """Add the caller's ``sys.path`` entries this interpreter lacks, after its own (so this
    checkout of assay, first here, stays the one imported)."""
    for entry in caller:
        if entry not in sys.path:
            sys.path.append(entry)
