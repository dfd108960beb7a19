"""``assay`` as a user starts it: a separate process running this checkout's code."""

from __future__ import annotations

import json
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


def printed_json(out: str) -> dict[str, Any]:
    """The result an ``assay ... --json`` command printed on ``out`` (its stdout), which must
    hold that one JSON object and nothing else — not even a Ray driver's raylet messages (a
    worker that died with its node), which its threads print to stdout whenever they arrive."""
    try:
        value = json.loads(out)
    except json.JSONDecodeError:
        raise AssertionError(f"stdout is not one JSON object: {out[-3000:]!r}") from None
    assert isinstance(value, dict) and "run_dir" in value, out[-3000:]
    return value
