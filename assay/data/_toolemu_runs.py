"""Finding the files of an ``assay toolemu run`` directory (or given ones) and reading an
evaluator file's scores by trajectory id."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assay import _json
from assay.data._toolemu_evals import load_toolemu_evaluations
from assay.data._toolemu_pairing import pair_evaluations
from assay.errors import DataError
from assay.types import Item

SAFETY_KEY = "ToolCallRisk"
HELPFULNESS_KEY = "Helpfulness"
_EVAL_KEYS = {"safety": SAFETY_KEY, "helpfulness": HELPFULNESS_KEY}
_NAME_HINTS = {"safety": "eval_agent_safe", "helpfulness": "eval_agent_help"}


@dataclass(frozen=True)
class AgreementFiles:
    """The trajectory file and the evaluator files an agreement report reads."""

    trajectories: Path
    safety: Path | None
    helpfulness: Path | None


_CLASSIFY_LINES = 200  # records read to tell a file's kind (the first one normally does)


def _classify(path: Path) -> str | None:
    """``"trajectories"``, ``"safety"``, ``"helpfulness"`` or None, from the file's records."""
    try:
        for line in _json.read_lines(path):
            if line.number > _CLASSIFY_LINES:
                break
            try:
                record = _json.loads(line.text)
            except json.JSONDecodeError:
                continue  # a torn line
            if not isinstance(record, dict):
                break
            if "intermediate_steps" in record:
                return "trajectories"
            scores = record.get("eval_scores")
            if isinstance(scores, dict):
                for field, key in _EVAL_KEYS.items():
                    if key in scores:
                        return field
    except DataError:  # unreadable: not one of ToolEmu's files
        return None
    # an evaluator file whose lines carry no eval_scores key still has ToolEmu's name
    for field, hint in _NAME_HINTS.items():
        if hint in path.name:
            return field
    return None


def _pick(run_dir: Path, kind: str, found: list[Path]) -> Path | None:
    if len(found) <= 1:
        return found[0] if found else None
    if kind == "trajectories":
        named = [p for p in found if p.name == "trajectories.jsonl"]
        if len(named) == 1:
            return named[0]
    option = {
        "trajectories": "pass the trajectory file instead of the run directory",
        "safety": "choose one with --safety FILE",
        "helpfulness": "choose one with --helpfulness FILE",
    }[kind]
    names = ", ".join(str(p.relative_to(run_dir)) for p in found)
    raise DataError(f"several {kind} files ({names}): {option}", path=run_dir)


def _scan(root: Path) -> dict[str, list[Path]]:
    """The run directory's ToolEmu JSONL files by kind, anywhere below it; trajectory files at
    the top level hide those deeper down (an ``assay toolemu run`` writes ``trajectories.jsonl``
    at the top and ``evals/<evaluator>_eval_agent_*.jsonl`` below)."""
    kinds: dict[str, list[Path]] = {"trajectories": [], "safety": [], "helpfulness": []}
    for path in sorted(root.rglob("*.jsonl")):
        kind = _classify(path)
        if kind is not None:
            kinds[kind].append(path)
    top = [p for p in kinds["trajectories"] if p.parent == root]
    if top:
        kinds["trajectories"] = top
    return kinds


def find_run_files(
    run_dir: str | Path,
    *,
    safety: str | Path | None = None,
    helpfulness: str | Path | None = None,
) -> AgreementFiles:
    """Find the ToolEmu files of a run directory by content, not by name.

    Among the ``*.jsonl`` files in and below the directory: the trajectory file is the one whose
    records have ``intermediate_steps`` (top level first; ``trajectories.jsonl`` wins a tie); the
    safety and helpfulness evaluator files are those whose ``eval_scores`` have
    ``ToolCallRisk`` / ``Helpfulness`` (or, if no line was scored, ToolEmu's file names). An
    explicit ``safety``/``helpfulness`` file replaces the search for that kind.
    """
    root = Path(run_dir)
    kinds = _scan(root)
    trajectories = _pick(root, "trajectories", kinds["trajectories"])
    if trajectories is None:
        raise DataError(
            "no ToolEmu trajectory file (JSONL records with 'intermediate_steps') in the run "
            "directory",
            path=root,
        )
    return AgreementFiles(
        trajectories=trajectories,
        safety=Path(safety) if safety else _pick(root, "safety", kinds["safety"]),
        helpfulness=Path(helpfulness)
        if helpfulness
        else _pick(root, "helpfulness", kinds["helpfulness"]),
    )


def resolve_files(
    run_or_trajectories: str | Path,
    *,
    safety: str | Path | None = None,
    helpfulness: str | Path | None = None,
) -> AgreementFiles:
    """A run directory (files found by :func:`find_run_files`, explicit ones win) or a trajectory
    file with explicit evaluator files; at least one evaluator file must be known."""
    path = Path(run_or_trajectories)
    if path.is_dir():
        files = find_run_files(path, safety=safety, helpfulness=helpfulness)
    elif path.is_file():
        files = AgreementFiles(
            path, Path(safety) if safety else None, Path(helpfulness) if helpfulness else None
        )
    else:
        raise DataError("no such run directory or trajectory file", path=path)
    if files.safety is None and files.helpfulness is None:
        raise DataError(
            "no evaluator file: give --safety and/or --helpfulness (ToolEmu evaluator JSONL)",
            path=path,
        )
    return files


def read_evaluator_scores(
    path: str | Path, trajectories: Sequence[Item], *, key: str
) -> dict[str, int | None]:
    """Evaluator scores by trajectory id (None = unscored or off the 0–3 scale), paired by
    :func:`assay.data.pair_evaluations` (``eval_id`` where unique, else line by line)."""
    by_line = {int(t.meta.get("line", i)): t.id for i, t in enumerate(trajectories)}
    rows = load_toolemu_evaluations(path, key=key, keep_raw=False)
    paired, _ = pair_evaluations(rows, len(trajectories), path=path)
    return {by_line[line]: row["score"] for line, row in paired.items()}
