"""Work that can wait: loading what the end of a run needs (MLflow's store, plotting) in a
background thread while the LM calls are in flight — not before the first call leaves."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any


class Background:
    """``fn()`` in a daemon thread, started ``delay`` seconds from now (after the first LM
    calls are out) or at once when :meth:`join` is called, whichever comes first."""

    def __init__(
        self, fn: Callable[[], Any], *, delay: float = 1.0, name: str = "assay-background"
    ):
        self._go = threading.Event()
        self._result: dict[str, Any] = {}

        def run() -> None:
            self._go.wait(timeout=delay)
            try:
                self._result["value"] = fn()
            except BaseException as exc:  # raised again by join()
                self._result["error"] = exc

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def join(self) -> Any:
        """Wait for ``fn`` (starting it now if it has not started); its value, or its error."""
        self._go.set()
        self._thread.join()
        if "error" in self._result:
            raise self._result["error"]
        return self._result.get("value")


def preload(module: str) -> Background:
    """``module`` imported in the background while the LM calls are in flight — what only the
    end of a run needs (the statistics: NumPy, the bootstrap), kept off the way to the first
    request; ``join()`` returns the module."""

    def load() -> ModuleType:
        return importlib.import_module(module)

    return Background(load, name="assay-preload")
