"""``assay`` as a user starts it: a separate process running this checkout's code."""

from __future__ import annotations

import contextlib
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
    """The result an ``assay ... --json`` command printed on ``out`` (its stdout): the last line
    holding a JSON object with a ``run_dir``, read from its first ``{"``. Not simply the last
    line: a Ray driver prints the raylet's error messages (a worker that died with its node) to
    stdout from a thread of its own, so such a line may come after the result, or be written
    against either end of its line."""
    decoder = json.JSONDecoder()
    for line in reversed(out.splitlines()):
        start = line.find('{"')
        while start >= 0:
            with contextlib.suppress(json.JSONDecodeError):
                value, _ = decoder.raw_decode(line, start)
                if isinstance(value, dict) and "run_dir" in value:
                    return value
            start = line.find('{"', start + 1)
    raise AssertionError(f"no JSON result on the command's stdout: {out[-3000:]!r}")
