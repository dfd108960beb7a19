"""Scratch files and folders named by the process that made them (``<kind>-<pid>-…``), so that
what a killed process left behind is found and removed by the next one: a sort's runs on disk, a
stream's spool. A folder removes itself when its work ends; a kill is what this is for."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (another user's process counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_orphans(folder: Path, kind: str) -> None:
    """Remove what processes that are gone left in ``folder`` under ``<kind>-<pid>-``."""
    for left in folder.glob(f"{kind}-*-*"):
        pid = left.name[len(kind) + 1 :].split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            if left.is_dir():
                shutil.rmtree(left, ignore_errors=True)
            else:
                left.unlink(missing_ok=True)


@contextmanager
def scratch_folder(kind: str) -> Iterator[Path]:
    """A new folder ``<kind>-<pid>-…`` in the system's temporary folder, removed at the end;
    those a killed process left there are removed first."""
    remove_orphans(Path(tempfile.gettempdir()), kind)
    with tempfile.TemporaryDirectory(prefix=f"{kind}-{os.getpid()}-") as folder:
        yield Path(folder)
