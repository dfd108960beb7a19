"""Scratch folders a killed process leaves behind (a sort's runs on disk) are removed by the next
process that makes one of the same kind; a live process's are left alone."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from assay._scratch import scratch_folder

HOLD = """
import sys, time
from assay._scratch import scratch_folder
with scratch_folder(sys.argv[1]) as folder:
    (folder / "run-0").write_text("rows")
    print(folder, flush=True)
    time.sleep(600)
"""


def _holder(kind: str) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, kind], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_processs_folder_goes_when_the_next_one_starts_a_live_ones_stays():
    kind = f"assay-test{uuid.uuid4().hex[:8]}"
    killed, left = _holder(kind)
    live, kept = _holder(kind)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert left.is_dir() and (left / "run-0").exists()  # a kill cleans nothing up
        with scratch_folder(kind) as mine:
            assert mine.is_dir() and mine.name.startswith(kind)
            assert not left.exists()  # the dead process's: removed
            assert kept.is_dir()  # the live one's: left alone
        assert not mine.exists()  # its own: removed at the end
    finally:
        live.kill()
        live.wait()
        for p in (left, kept):
            shutil.rmtree(p, ignore_errors=True)
