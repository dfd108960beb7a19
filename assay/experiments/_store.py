"""The run directory: resolved config, append-only judgments, metrics, report, state.

Judgments are appended one JSON line at a time (flushed and fsynced), so a killed run keeps
every finished judgment; a torn last line is dropped on resume and its item judged again.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay.errors import DataError, RunError
from assay.types import Judgment

T = TypeVar("T", bound=BaseModel)
JUDGMENTS = "judgments.jsonl"
STATE = "run.json"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class RunStore:
    """Files of one run. Created only after the config and data have been validated."""

    def __init__(self, path: Path, run_hash: str):
        self.path = path
        self.run_hash = run_hash
        self._lock = threading.Lock()

    # -- state ------------------------------------------------------------------------------
    def open(self, resolved_config: dict[str, Any]) -> dict[str, Any]:
        """Create or reopen the run; refuses a directory that belongs to another run."""
        self.path.mkdir(parents=True, exist_ok=True)
        state = self.state()
        if state and state.get("run_hash") != self.run_hash:
            raise RunError(
                f"{self.path}: belongs to another run (hash {state.get('run_hash')}); choose another output_dir"
            )
        if not state:
            state = {"run_hash": self.run_hash, "status": "running", "created": now()}
            self.write_json(STATE, state)
            import yaml

            (self.path / "config.yaml").write_text(
                yaml.safe_dump(resolved_config, sort_keys=False, allow_unicode=True)
            )
        return state

    def state(self) -> dict[str, Any]:
        p = self.path / STATE
        return json.loads(p.read_text()) if p.exists() else {}

    def update_state(self, **changes: Any) -> None:
        state = self.state()
        state.update(changes)
        self.write_json(STATE, state)

    def write_json(self, name: str, obj: Any) -> Path:
        """Write atomically (temp file + rename): a kill never leaves half a file."""
        p = self.path / name
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str))
        os.replace(tmp, p)
        return p

    def write_text(self, name: str, text: str) -> Path:
        p = self.path / name
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
        return p

    # -- append-only records ------------------------------------------------------------------
    def records(self, name: str, model: type[T]) -> list[T]:
        """Records of an append-only JSONL file; a torn final line (the run was killed while
        writing it) is discarded and removed from the file."""
        p = self.path / name
        if not p.exists():
            return []
        lines = [ln for ln in p.read_text(encoding="utf-8").splitlines(keepends=True) if ln.strip()]
        out: list[T] = []
        for i, line in enumerate(lines):
            try:
                rec = model.model_validate_json(line)
            except ValueError:
                if i == len(lines) - 1:
                    break
                raise DataError("malformed record", path=p, row=i + 1) from None
            if not line.endswith("\n"):
                break
            out.append(rec)
        if len(out) != len(lines):
            self.write_text(name, "".join(lines[: len(out)]))
        return out

    def append_record(self, name: str, record: BaseModel) -> None:
        """Append one record as a JSON line, flushed and fsynced (thread-safe)."""
        line = record.model_dump_json() + "\n"
        path = self.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    # -- judgments --------------------------------------------------------------------------
    def judgments(self, name: str = JUDGMENTS) -> dict[str, Judgment]:
        """Finished judgments by item id (the first one wins)."""
        out: dict[str, Judgment] = {}
        for j in self.records(name, Judgment):
            out.setdefault(j.item_id, j)
        return out

    def append(self, judgment: Judgment, name: str = JUDGMENTS) -> None:
        self.append_record(name, judgment)
