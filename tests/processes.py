"""``assay`` as a user starts it: a separate process running this checkout's code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def assay_process(
    *args: str,
    cwd: Path,
    path: tuple[Path, ...] = (),
    env: dict[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen:
    """``python -m assay.cli *args`` in ``cwd``, unbuffered, with pipes for stdout and stderr
    (``PYTHONPATH``: this checkout's assay, not whichever one is installed, then ``path``; the
    run's sidecar as by default; ``env``: variables set over this process's); ``popen``: more
    of ``subprocess.Popen``'s keywords (a ``preexec_fn``)."""
    pythonpath = os.pathsep.join(str(p) for p in (REPO, *path))
    env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1", "PYTHONPATH": pythonpath}
    env.pop("ASSAY_SIDECAR", None)  # the command's own default, as a user runs it
    return subprocess.Popen(
        [sys.executable, "-m", "assay.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
