"""A run's plug-ins (its config's ``plugins``, ``--plugin``): part of its identity, and imported
by a process that reads the finished run back — its report written again, ``compare``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assay._registry import load_plugins, plugin_identity, plugin_spec
from assay._yaml import load as load_yaml
from assay.types import stable_hash

if TYPE_CHECKING:
    from assay.runs._settings import RunSettings


def run_identity(config: RunSettings, run_hash: str) -> str:
    """The hash of a run of ``config``: ``run_hash`` (what its runner computed from its inputs)
    with its plug-ins' identity (a file's content, a module's name, version and content); the
    same ``run_hash`` when it names none."""
    plugins = getattr(config, "plugins", None)
    if not plugins:
        return run_hash
    return stable_hash([run_hash, plugin_identity(plugins)])


def load_run_plugins(run_dir: Path) -> None:
    """Import the plug-ins a run's ``config.yaml`` names (nothing when it has none)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return
    config = load_yaml(path.read_text(encoding="utf-8"))
    plugins = config.get("plugins") if isinstance(config, dict) else None
    if isinstance(plugins, list):
        load_plugins([plugin_spec(str(p), None) for p in plugins])
