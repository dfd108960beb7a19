"""Load a run's items from its data config (tables, ToolEmu trajectories, Inspect logs, MLflow
traces), and the fingerprint of a set of items (part of a run's identity)."""

from __future__ import annotations

from pathlib import Path

import assay
from assay._json import read_lines
from assay.data import (
    TranscriptPrep,
    build_pairs,
    check_limit,
    load_inspect_log,
    load_mlflow_traces,
    load_table,
    load_toolemu_evaluations,
    load_toolemu_toolkits,
    load_toolemu_trajectories,
    missing_labels_error,
    pair_evaluations,
    render_toolkit_descriptions,
)
from assay.errors import DataError
from assay.inputs._config import DataConfig
from assay.runs import (
    write_atomic,
)
from assay.scale import Scale
from assay.types import Item, stable_hash


def data_fingerprint(items: list[Item]) -> str:
    """The hash of the items' content: part of a run's identity (same config, other data: a new
    run)."""
    return stable_hash([it.model_dump(mode="json") for it in items])


def item_set_tags(items: list[Item], *, split: str, of: int | None = None) -> dict[str, str]:
    """MLflow tags naming the exact items a judge was measured on: ``assay.items`` (the
    fingerprint of their ids, texts and references), ``assay.n_items``, ``assay.split`` and
    ``assay.n_data`` (the items of the data set it was drawn from, default: these). ``assay
    compare`` ranks together only runs with the same ``assay.items``."""
    return {
        "assay.items": data_fingerprint(sorted(items, key=lambda it: it.id))[:16],  # a set
        "assay.n_items": str(len(items)),
        "assay.split": split,
        "assay.n_data": str(len(items) if of is None else of),
    }


def load_items(
    data: DataConfig,
    scale: Scale,
    *,
    cache_dir: Path | None = None,
    limit: int | None = None,
    notes: dict | None = None,
    seed: int = 0,
) -> list[Item]:
    """Items of ``data``, validated against ``scale``; ``limit`` (else ``data.limit``) keeps the
    first N, and must be at least 1. With ``data.pairs`` the items are labelled pairs, and
    ``notes["pairs"]`` (when a dict is passed) gets what was built and skipped. Several
    annotators (``data.annotators``): the reference is their majority, ties drawn from
    ``seed``."""
    limit = check_limit(limit) if limit is not None else data.limit
    if data.pairs is not None:
        items = _pair_items(data, scale, cache_dir, notes)
    elif data.format == "table":
        items = _cached_table(data, scale, cache_dir, limit)
    elif data.format == "inspect":
        items = load_inspect_log(
            data.path, expected=data.expected, scale=scale, missing_expected=data.missing_expected
        )
    elif data.format == "mlflow":
        items = _trace_items(data, scale, limit, seed)
    else:
        items = _toolemu_items(data, scale)
    if limit is not None:
        items = items[:limit]
    if not items:
        raise DataError("no items to judge", path=data.path)
    return [_prepared(it, data.transcript) for it in items]


def _prepared(item: Item, prep: TranscriptPrep) -> Item:
    """``item`` with its transcript preprocessed; what was changed is kept in ``meta``."""
    if not item.transcript or prep == TranscriptPrep():
        return item
    messages, counts = prep.apply(item.transcript)
    changed = {k: v for k, v in counts.items() if v}
    meta = {**item.meta, "transcript_prep": changed} if changed else item.meta
    return item.model_copy(update={"transcript": messages, "meta": meta})


def _cached_table(
    data: DataConfig, scale: Scale, cache_dir: Path | None, limit: int | None
) -> list[Item]:
    """A local table's items, read once per version of the file: reading a table goes through
    ``datasets`` (pandas, pyarrow: a second or two of imports), so the items are kept in
    ``<cache_dir>/../items/<key>.jsonl``, keyed by the file's path, size and modification time,
    the column map, scale and limit, and the assay version (a changed file is read again)."""

    def read() -> list[Item]:
        return load_table(
            data.path,
            columns=data.columns,
            scale=scale,
            split=data.split,
            limit=limit,
            cache_dir=cache_dir,
            missing_expected=data.missing_expected,
        )

    path = Path(data.path).expanduser()
    if cache_dir is None or not path.is_file():
        return read()
    st = path.stat()
    key = stable_hash(
        [
            str(path.resolve()),
            st.st_size,
            st.st_mtime_ns,
            data.columns.model_dump(),
            scale.model_dump(mode="json"),
            limit,
            data.missing_expected,
            assay.__version__,
            _ITEMS_FORMAT,
        ]
    )
    cached = Path(cache_dir).parent / "items" / f"{key}.jsonl"
    if cached.is_file():
        try:
            return [Item.model_validate_json(line.text) for line in read_lines(cached)]
        except (ValueError, DataError):
            pass  # a damaged cache file: read the table again
    items = read()
    cached.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(cached, "".join(it.model_dump_json() + "\n" for it in items))
    return items


_ITEMS_FORMAT = 2  # bump when reading a table changes what its items are


def _trace_items(data: DataConfig, scale: Scale, limit: int | None, seed: int) -> list[Item]:
    """The traces' items; with several annotators each item's reference is their majority
    (``assay agreement``'s, ties broken from ``seed``). A trace without the named assessment
    is an error, or with ``missing_expected: keep`` an item without a reference (counted)."""
    from assay.inputs._annotations import majority

    source = data.trace_source()
    items = load_mlflow_traces(source, scale, limit=limit)
    if data.annotators:
        rows = [(it.id, who, s) for it in items for who, s in it.meta["annotations"].items()]
        rows += [(it.id, "", None) for it in items if not it.meta["annotations"]]
        majorities, _ = majority(rows, seed=seed, scale=scale)
        for it in items:
            it.expected = majorities.get(it.id)
    missing = [it.id for it in items if it.expected is None]
    if source.expectation and missing and data.missing_expected == "error":
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise DataError(
            f"{len(missing)} of {len(items)} traces have no human assessment named "
            f"'{source.expectation}' (traces {shown}); set data.missing_expected: keep to judge "
            "them without a reference",
            path=source.tracking_uri,
            field="expectation",
        )
    return items


def _toolemu_items(data: DataConfig, scale: Scale) -> list[Item]:
    items = load_toolemu_trajectories(data.path)
    if data.toolkits:
        toolkits = load_toolemu_toolkits(data.toolkits)
        for it in items:
            it.meta["tool_descriptions"] = render_toolkit_descriptions(
                toolkits, it.meta.get("toolkits") or []
            )
    if data.expected_from:
        evals = load_toolemu_evaluations(data.expected_from, key=data.expected_key)
        by_line, _ = pair_evaluations(evals, len(items), path=data.expected_from)
        missing = [
            it.meta["line"] + 1
            for it in items
            if (by_line.get(it.meta["line"]) or {}).get("score") is None
        ]
        if missing and data.missing_expected == "error":
            raise missing_labels_error(missing, len(items), data.expected_from, "eval_scores")
        for it in items:
            e = by_line.get(it.meta["line"])
            if e is not None and e["score"] is not None:
                try:
                    it.expected = scale.coerce(e["score"])
                except ValueError as exc:
                    raise DataError(
                        str(exc), path=data.expected_from, row=e["line"] + 1, field="eval_scores"
                    ) from None
    return items


def _pair_items(data: DataConfig, scale: Scale, cache_dir: Path | None, notes: dict | None):
    from assay.errors import ConfigError
    from assay.programs import is_pairwise

    if data.format != "table":
        raise ConfigError("data.pairs: pairs are built from a table (data.format: table)")
    if not is_pairwise(scale):
        raise ConfigError(
            f"data.pairs: pairs need the pairwise scale (task: pairwise; categorical A|B|tie), "
            f"not {scale.describe()}"
        )
    rows = load_table(
        data.path,
        columns=data.columns.model_copy(update={"expected": None}),
        split=data.split,
        cache_dir=cache_dir,
    )
    items, counts = build_pairs(rows, data.pairs, path=data.path)  # type: ignore[arg-type]
    if notes is not None:
        notes["pairs"] = counts
    return items
