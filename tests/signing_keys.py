"""The run's signing key read from another folder, as a user who moves or links it would: the
heads, journals and histories kept for the key must be found by its identity, not its path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

import pytest

from assay._signing import KEY_FILE_ENV, key_file


def key_elsewhere(
    folder: Path, monkeypatch: pytest.MonkeyPatch, how: Literal["copy", "symlink"] = "copy"
) -> Path:
    """The key in use, copied (or linked) into the new ``folder``, and read from there from now
    on; returns its new path."""
    folder.mkdir()
    moved = folder / "signing.key"
    if how == "symlink":
        moved.symlink_to(key_file())
    else:
        shutil.copy2(key_file(), moved)
    monkeypatch.setenv(KEY_FILE_ENV, str(moved))
    return moved
