"""A YAML config as read, before it is validated: its overrides applied, its ``@file`` texts read
into it, its plug-ins and data paths made absolute — and the files it names beyond that.

This is the first half of :func:`~assay.inputs.load_config` (the second validates the mapping
into the runner's config model). It imports no config model, no DSPy and no data reader, so a
command can tell from it alone whether a finished run was made from these very inputs
(:mod:`assay.runs._reread`)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay import _json
from assay._files import read_text_field, resolve, sha256_file
from assay._registry import plugin_spec
from assay._yaml import read_input
from assay.errors import ConfigError

Location = tuple[str | int, ...]


@dataclass
class ResolvedConfig:
    """A config file's mapping as read (``raw``), the folder its relative paths are against
    (``base``), and which rubric file each field read from a file came from (``files``: an
    error in one names that file)."""

    raw: dict[str, Any]
    base: Path
    files: dict[Location, Path] = field(default_factory=dict)


def resolve_config(path: str | Path, overrides: dict | None = None) -> ResolvedConfig:
    """Read the YAML config at ``path``: apply ``overrides`` (dotted keys), make the plug-ins'
    and the data's paths absolute and the judges' ``program_state`` and scripted answer sheets
    (``model: scripted:<sheet.json>``) too, and read every ``@file`` text (an instruction, a
    rubric, a criteria file) into it."""
    path = Path(path)
    raw = read_input(path, ConfigError, what="config file")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config is a YAML mapping")
    base = path.resolve().parent
    for key, value in (overrides or {}).items():
        _set_dotted(raw, key, value)
    if isinstance(raw.get("plugins"), list):
        try:
            raw["plugins"] = [plugin_spec(str(p), base) for p in raw["plugins"]]
        except ConfigError as exc:
            raise ConfigError(f"{path}: field 'plugins': {exc}") from None
    files: dict[Location, Path] = {}
    _resolve_answer_sheets(raw, base)
    _resolve_judge_text(raw.get("judge"), base, ("judge",), files)
    for i, judge in enumerate(raw.get("judges") or []):
        _resolve_judge_text(judge, base, ("judges", i), files)
    data = raw.get("data")
    if isinstance(data, dict):
        for key in _DATA_FILES:
            if isinstance(data.get(key), str) and data[key] and not _is_remote(data[key]):
                try:
                    data[key] = str(resolve(base / data[key]))
                except ConfigError as exc:
                    raise ConfigError(f"{path}: field 'data.{key}': {exc}") from None
    return ResolvedConfig(raw, base, files)


_DATA_FILES = ("path", "toolkits", "expected_from")
"""The data keys that name a local file (a table, an Inspect log, ToolEmu trajectories, their
toolkits and evaluator scores)."""


def named_files(resolved: ResolvedConfig) -> dict[str, str] | None:
    """The SHA-256 of every file the config reads beyond its own text, by path: its data files
    and every program state (a judge's ``program_state``, a test's ``generator_state`` … —
    every ``*_state`` key, relative to the config's folder as the harness loads them). None when
    it reads something that no local file holds — traces on a tracking server, a hub data set,
    a state in MLflow, a directory, a file that is not there: what is in it cannot be told
    without reading it the way the run does."""
    digests: dict[str, str] = {}
    data = resolved.raw.get("data")
    if isinstance(data, dict):
        if data.get("format") == "mlflow" or data.get("tracking_uri"):
            return None
        for key in _DATA_FILES:
            if data.get(key) and _add(digests, data[key], resolved.base) is None:
                return None
    for ref in _states(resolved.raw):
        if ref is None or _add(digests, ref, resolved.base) is None:
            return None
    for spec in _model_specs(resolved.raw):
        sheet = _answer_sheet(spec["model"], resolved.base)
        if sheet is not None:
            _add(digests, str(sheet), resolved.base)
    return digests


def _model_specs(node: object) -> Iterator[dict[str, Any]]:
    """Every mapping in the config with a text ``model`` (a judge, a member, a generator …)."""
    if isinstance(node, dict):
        if isinstance(node.get("model"), str):
            yield node
        for value in node.values():
            yield from _model_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _model_specs(value)


def _answer_sheet(model: str, base: Path) -> Path | None:
    """The file a ``scripted:<sheet.json>`` model reads, against ``base`` when relative (None:
    another model, or a registered script's name that no file there has)."""
    if not model.startswith("scripted:"):
        return None
    path = base / Path(model.split(":", 1)[1]).expanduser()
    return path if path.is_file() else None


def _resolve_answer_sheets(raw: dict[str, Any], base: Path) -> None:
    """Name each scripted answer sheet by its absolute path: its content is part of the model's
    identity (:meth:`assay.lm.ModelSpec.resolved`), read wherever the command runs from."""
    for spec in _model_specs(raw):
        sheet = _answer_sheet(spec["model"], base)
        if sheet is not None:
            spec["model"] = f"scripted:{resolve(sheet)}"


def _states(node: object) -> Iterator[str | None]:
    """Every value of a ``*_state`` key in the mapping (None for one that is not a file's
    name: an MLflow URI, or not text)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.endswith("_state") and value is not None:
                local = isinstance(value, str) and value and ":/" not in value
                yield value if local else None
            else:
                yield from _states(value)
    elif isinstance(node, list):
        for value in node:
            yield from _states(value)


def _add(digests: dict[str, str], name: object, base: Path) -> str | None:
    """The digest of the regular file ``name`` (against ``base`` when relative), added to
    ``digests``; None when it is no such file."""
    if not isinstance(name, str):
        return None
    path = base / Path(name).expanduser()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        digests[str(path)] = digest = sha256_file(path)
    except (OSError, ConfigError):
        return None
    return digest


def _is_remote(value: str) -> bool:
    """A hub data set name (``owner/name``) that is not a local file."""
    return (
        "/" in value
        and not value.startswith((".", "/", "~"))
        and value.count("/") == 1
        and "." not in value
    )


def _resolve_judge_text(
    judge: object, base: Path, loc: Location, files: dict[Location, Path]
) -> None:
    """Read a judge's ``@file`` fields (and its panel members'); note in ``files`` which field
    came from which file, so that an error in it names that file."""
    if not isinstance(judge, dict):
        return
    for key in ("instruction", "rubric"):
        if isinstance(judge.get(key), str):
            judge[key] = read_text_field(judge[key], base)
    state = judge.get("program_state")
    if isinstance(state, str) and "://" not in state and ":/" not in state:
        judge["program_state"] = str(resolve(base / state))
    crit = judge.get("criteria")
    if isinstance(crit, str) and crit.startswith("@"):
        file = resolve(base / crit[1:])
        text = read_text_field(crit, base) or "[]"
        try:
            judge["criteria"] = _json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{file}: criteria file is not JSON (line {exc.lineno}: {exc.msg})"
            ) from None
        _check_rubric_ids(judge["criteria"], file)
        files[(*loc, "criteria")] = file
    for j, member in enumerate(judge.get("members") or []):
        _resolve_judge_text(member, base, (*loc, "members", j), files)


def _check_rubric_ids(criteria: object, path: Path) -> None:
    """A rubric file is a list of objects, each with a unique text ``id`` (one-line errors
    naming the file and the entry; the rest is validated with the judge config)."""
    if not isinstance(criteria, list):
        raise ConfigError(f"{path}: a rubric is a JSON list of {{id, instructions}} objects")
    seen: dict[str, int] = {}
    for n, entry in enumerate(criteria, start=1):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: entry {n} is not an object")
        cid = entry.get("id")
        if not isinstance(cid, str) or not cid.strip():
            raise ConfigError(f"{path}: entry {n}: field 'id' is missing or not text")
        if cid in seen:
            raise ConfigError(f"{path}: entry {n}: duplicate id '{cid}' (also entry {seen[cid]})")
        seen[cid] = n


def _set_dotted(raw: dict, key: str, value: object) -> None:
    node = raw
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
