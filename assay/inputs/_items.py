"""Load a run's items from its data config (tables, ToolEmu trajectories, Inspect logs, MLflow
traces), and the fingerprint of a set of items (part of a run's identity)."""

from __future__ import annotations

import functools
import itertools
import logging
import operator
import os
import tempfile
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import assay
from assay._json import placed_lines, read_lines
from assay._scratch import remove_orphans, scratch_folder
from assay._sorted_runs import SortedRuns
from assay.data import (
    TranscriptPrep,
    check_limit,
    iter_inspect_log,
    iter_mlflow_traces,
    iter_pairs,
    iter_table,
    iter_toolemu_trajectories,
    load_toolemu_evaluations,
    missing_labels_error,
    pair_evaluations,
    render_toolkit_descriptions,
    scan_toolemu_trajectories,
)
from assay.errors import DataError
from assay.inputs._config import DataConfig
from assay.inputs._items_cache import cached_items
from assay.runs import (
    write_atomic,
)
from assay.scale import Scale
from assay.types import Item, ListHash, canonical_json

_log = logging.getLogger(__name__)


def data_fingerprint(items: Iterable[Item]) -> str:
    """The hash of the items' content: part of a run's identity (same config, other data: a new
    run). The items are read once, as they come."""
    digest = ListHash()
    for it in items:
        digest.add_text(dumps(it))
    return digest.hexdigest()


def dumps(item: Item) -> str:
    """The item's text in its fingerprint (:func:`assay.types.canonical_json` of its dump)."""
    return canonical_json(item.model_dump(mode="json"))


class ItemStream:
    """A run's items, read again from their source each time they are iterated, one at a time
    — a local table through the items cache file it was read into, any other source (a hub
    data set, MLflow traces, an Inspect log, ToolEmu trajectories, labelled pairs built from a
    table) through the spool file it was written to, so a run of a million items holds none of
    them whole. Each iteration holds its stream, so a spool file that goes with the stream
    stays while it is read (``for it in stream_items(...)`` keeps no other reference).
    ``lines``: the file it reads (:func:`stream_items`'), for a reader that comes back to an
    item by where its line starts (:class:`~assay.inputs.StoredItems`)."""

    def __init__(self, read: Callable[[], Iterator[Item]], lines: ItemLines | None = None):
        self._read = read
        self.lines = lines

    def __iter__(self) -> Iterator[Item]:
        yield from self._read()  # this frame holds ``self``


@dataclass(frozen=True)
class ItemLines:
    """The file an :class:`ItemStream` of :func:`stream_items` reads: its first ``limit``
    lines (None: all), each an item, its transcript prepared with ``transcript``."""

    path: Path
    transcript: TranscriptPrep
    limit: int | None = None

    def placed(self) -> Iterator[tuple[int, str]]:
        """Each item's line with the byte offset it starts at, in the file's order."""
        lines = itertools.islice(placed_lines(self.path), self.limit)
        return ((offset, line.text) for offset, line in lines)

    def item(self, line: str | bytes) -> Item:
        """The item of one of the file's lines, as :func:`load_items` gives it."""
        return _prepared(Item.model_validate_json(line), self.transcript)

    def __iter__(self) -> Iterator[Item]:
        for _, text in self.placed():
            yield self.item(text)


@dataclass
class ItemIndex:
    """What a run keeps of each item while its judgments stream past: its id and reference
    by position (the items' order), and the fingerprint of their content, from one reading of
    the items. Everything else about an item is read again from the stream when needed."""

    ids: list[str]
    expected: list[int | None]
    fingerprint: str
    position: dict[str, int] = field(repr=False)
    # the sample each item repeats (:func:`sample_of`), by position; None when no item does
    samples: list[str | None] | None = field(default=None, repr=False)

    @classmethod
    def read(cls, items: Iterable[Item]) -> ItemIndex:
        digest = ListHash()
        ids: list[str] = []
        expected: list[int | None] = []
        samples: list[str | None] | None = None
        for it in items:
            digest.add_text(dumps(it))
            sample = sample_of(it)
            if sample is not None and samples is None:  # kept only for items that have one
                samples = [None] * len(ids)
            if samples is not None:
                samples.append(sample)
            ids.append(it.id)
            expected.append(it.expected)
        position = {i: k for k, i in enumerate(ids)}
        return cls(ids, expected, digest.hexdigest(), position, samples)

    def __len__(self) -> int:
        return len(self.ids)


def sample_of(item: Item) -> str | None:
    """The sample ``item`` is one epoch of — an Inspect log's item, whose ``meta`` names its task,
    model, sample and epoch: the epochs of a sample (the same task, model and sample) share its
    input and its reference, so they are not independent items, and an interval resamples them
    together. None for any other item."""
    meta = item.meta
    if "epoch" not in meta or "sample_id" not in meta:
        return None
    return canonical_json([meta.get("task"), meta.get("model"), meta["sample_id"]])


def samples_of(items: Iterable[Item]) -> list[str]:
    """What an interval or a test over ``items`` resamples together, by item: the sample each
    repeats (:func:`sample_of`), else the item alone."""
    return [sample_of(it) or f"item {it.id}" for it in items]


def repeated_samples(items: Iterable[Item]) -> tuple[int, int]:
    """``(items, samples)``: how many of ``items`` are epochs of an Inspect sample with several
    epochs among them, and how many such samples (``(0, 0)``: the items are independent)."""
    counts = Counter(s for s in map(sample_of, items) if s is not None)
    repeated = [n for n in counts.values() if n > 1]
    return sum(repeated), len(repeated)


def epochs_line(items: int, samples: int, taking: str) -> str:
    """What a command that takes its items as independent says of ``items`` epochs of
    ``samples`` Inspect samples among them (``taking``: what takes them so, with its verb —
    "the thresholds' risk guarantee takes")."""
    return (
        f"{items} of the items are epochs of {samples} Inspect samples (the same input and "
        f"reference, judged again): {taking} every item as independent, surer than the samples "
        "allow; set data.epochs: first to judge one epoch a sample"
    )


def item_set_tags(items: Iterable[Item], *, split: str, of: int | None = None) -> dict[str, str]:
    """MLflow tags naming the exact items a judge was measured on: ``assay.items`` (the
    fingerprint of their ids, texts and references), ``assay.n_items``, ``assay.split`` and
    ``assay.n_data`` (the items of the data set it was drawn from, default: these). ``assay
    compare`` ranks together only runs with the same ``assay.items``."""
    if isinstance(items, ItemStream):  # a set: sorted by id, read a slice of ids at a time
        fingerprint, n = _sorted_fingerprint(items)
    else:
        listed = sorted(items, key=lambda it: it.id)
        fingerprint, n = data_fingerprint(listed), len(listed)
    return {
        "assay.items": fingerprint[:16],
        "assay.n_items": str(n),
        "assay.split": split,
        "assay.n_data": str(n if of is None else of),
    }


_SORT_SLICE = 100_000  # items held at once while a stream's fingerprint is taken in id order


def _sorted_fingerprint(items: ItemStream) -> tuple[str, int]:
    """:func:`data_fingerprint` of the stream's items sorted by id (stably, as a list's are),
    holding ``_SORT_SLICE`` of them at a time: one reading of the stream into sorted runs of
    that many ids and texts on disk, in a temporary folder, merged in id order into the digest
    — an external merge sort, so neither the items nor their ids are ever held all at once."""
    digest = ListHash()
    with scratch_folder("assay-ids") as folder:
        rows = SortedRuns(
            ((it.id, dumps(it)) for it in items),
            key=operator.itemgetter(0),
            folder=folder,
            run_rows=_SORT_SLICE,
        )
        for _, text in rows:
            digest.add_text(text)
    return digest.hexdigest(), len(rows)


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
    ``notes["pairs"]`` (when a dict is passed) gets what was built and skipped;
    ``notes["left_out"]`` what the source held and the items leave out (an Inspect log's
    errored samples, with ``data.errored_samples: skip``: ``{"errored_samples": n}``). Several
    annotators (``data.annotators``): the reference is their majority, ties drawn from
    ``seed``."""
    return list(stream_items(data, scale, cache_dir=cache_dir, limit=limit, notes=notes, seed=seed))


def stream_items(
    data: DataConfig,
    scale: Scale,
    *,
    cache_dir: Path | None = None,
    limit: int | None = None,
    notes: dict | None = None,
    seed: int = 0,
) -> ItemStream:
    """:func:`load_items` as an :class:`ItemStream`: a local table is read (and checked) into
    its items cache file now; any other source — a hub data set, MLflow traces, an Inspect log,
    ToolEmu trajectories — into a spool file that goes with the stream (a batch of rows, a page,
    a few samples, a line at a time); the items are read from that file each time the stream is
    iterated. Labelled pairs (``data.pairs``) are built from the table read row by row into a
    spool file, in id order (:func:`assay.data.iter_pairs`: the largest group held)."""
    limit = check_limit(limit) if limit is not None else data.limit
    from_table = data.format == "table" and data.pairs is None
    cached = _cached_table(data, scale, cache_dir, limit) if from_table else None
    if cached is not None:
        lines = ItemLines(cached, data.transcript, limit)
        return _nonempty(ItemStream(lines.__iter__, lines), data)
    counts: dict[str, int] = {}  # what the source held and the items leave out
    # an Inspect log's samples, MLflow's traces left out as errored: (id, error or state)
    errored: list[tuple[str, str]] = []
    if data.pairs is not None:
        spool = _spooled_pairs(data, scale, cache_dir, notes)
    elif data.format == "mlflow":
        spool = _spooled_traces(data, scale, cache_dir, limit, seed, counts, errored)
    else:  # a table not on disk (a hub data set), an Inspect log, ToolEmu's files
        items = _read(data, scale, cache_dir, limit, counts, errored)
        spool = _spooled(items, _spool_file(_spool_folder(cache_dir), data.format))
    _say_left_out(data, counts, notes, errored)
    lines = ItemLines(spool, data.transcript, limit)
    stream = ItemStream(lines.__iter__, lines)
    weakref.finalize(stream, spool.unlink, missing_ok=True)  # the stream's, while it lives
    return _nonempty(stream, data)


def _say_left_out(
    data: DataConfig,
    counts: dict[str, int],
    notes: dict | None,
    errored: list[tuple[str, str]] | None = None,
) -> None:
    """What the source held and the items leave out (``counts``; ``errored``: an Inspect log's
    samples or MLflow's traces left out, each with its error or state), for the run to say
    (``notes["left_out"]`` and ``notes["errored_samples"]``, the first five of those named:
    console, metrics.json, reports) or, for a runner with no line for it, said here once."""
    left_out = {k: n for k, n in counts.items() if n}
    if not left_out:
        return
    named = errored_names(errored or [])
    if notes is not None:
        notes["left_out"] = left_out
        if named:
            notes["errored_samples"] = named
    else:
        _log.warning("%s: %s", data.path or data.tracking_uri, left_out_line(left_out, named))


def errored_names(errored: list[tuple[str, str]], shown: int = 5) -> list[str]:
    """The first ``shown`` samples (or traces) left out as errored, each ``<id>: <its error>``
    (the error cut to a line of 120 characters)."""
    out = []
    for item_id, why in errored[:shown]:
        line = " ".join(str(why).split())
        out.append(f"{item_id}: {line[:117] + '...' if len(line) > 120 else line}")
    return out


def _read(
    data: DataConfig,
    scale: Scale,
    cache_dir: Path | None,
    limit: int | None,
    counts: dict[str, int] | None = None,
    errored: list[tuple[str, str]] | None = None,
) -> Iterator[Item]:
    """The items of ``data`` (a table, an Inspect log or ToolEmu trajectories) as they are
    read; ``counts["errored_samples"]``: the samples of an Inspect log left out as errored,
    ``errored`` each of them with its error."""
    if data.format == "inspect":
        return iter_inspect_log(
            data.path,
            expected=data.expected,
            scale=scale,
            missing_expected=data.missing_expected,
            errored_samples=data.errored_samples,
            counts=counts,
            epochs=data.epochs,
            errored=errored,
        )
    if data.format == "toolemu":
        return _toolemu_items(data, scale)
    return iter_table(
        data.path,
        columns=data.columns,
        scale=scale,
        split=data.split,
        limit=limit,
        cache_dir=cache_dir,
        missing_expected=data.missing_expected,
        suggest_format=False,  # a config names a table by its extension
    )


def _nonempty(items: ItemStream, data: DataConfig) -> ItemStream:
    if next(iter(items), None) is None:
        raise DataError("no items to judge", path=data.path)
    return items


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
) -> Path | None:
    """A local table's items, read once per content of the file into its items cache
    (:mod:`._items_cache`: keyed by the file's bytes, used only while its signature holds),
    with the column map, scale and limit. None without a ``cache_dir``, or for a table that
    is not a file (a hub data set)."""
    path = Path(data.path).expanduser()
    if cache_dir is None or not path.is_file():
        return None
    made_by = [
        data.columns.model_dump(),
        scale.model_dump(mode="json"),
        limit,
        data.missing_expected,
        assay.__version__,
        _ITEMS_FORMAT,
    ]
    read = functools.partial(_read, data, scale, cache_dir, limit)
    return cached_items(path, made_by, read, Path(cache_dir).parent / "items")


# bump when reading a table changes what its items are (3: a 0/1 on true/false names by meaning)
_ITEMS_FORMAT = 3


def _spooled_traces(
    data: DataConfig,
    scale: Scale,
    cache_dir: Path | None,
    limit: int | None,
    seed: int,
    counts: dict[str, int] | None = None,
    errored: list[tuple[str, str]] | None = None,
) -> Path:
    """The traces' items in a spool file beside the items cache (``cache_dir``'s ``items``
    folder; else the system's temporary folder), written a search page at a time as MLflow
    serves them: no step holds the experiment's traces, or their items, whole. The run reads
    them from the file as it reads a table's items cache; the file goes with its stream.

    With several annotators each item's reference is their majority (``assay agreement``'s,
    ties broken from ``seed``), set in a second pass over the file from the votes kept from
    the first (an item's id and a label per annotator). A trace without the named assessment
    is an error, or with ``missing_expected: keep`` an item without a reference (counted)."""
    from assay.inputs._annotations import majority

    source = data.trace_source()
    votes: list[tuple[str, str, int | None]] = []
    unlabelled: list[tuple[str, str, int | None]] = []  # after the votes, as they were
    missing = _Missing()

    def noted(items: Iterator[Item]) -> Iterator[Item]:
        for it in items:
            if data.annotators:
                labels = it.meta["annotations"].items()
                votes.extend((it.id, who, label) for who, label in labels)
                if not labels:
                    unlabelled.append((it.id, "", None))
            else:
                missing.add(it)
            yield it

    traces = noted(iter_mlflow_traces(source, scale, limit=limit, counts=counts, errored=errored))
    spool = _spooled(traces, _spool_file(_spool_folder(cache_dir), "traces"))
    try:
        if data.annotators:
            majorities, _ = majority(votes + unlabelled, seed=seed, scale=scale)
            del votes, unlabelled
            write_atomic(spool, _with_majority(spool, majorities, missing))
        if source.expectation and missing.ids and data.missing_expected == "error":
            raise DataError(
                f"{missing.count} of {missing.seen} traces have no human assessment named "
                f"'{source.expectation}' (traces {missing.shown()}); set "
                "data.missing_expected: keep to judge them without a reference",
                path=source.tracking_uri,
                field="expectation",
            )
    except BaseException:
        spool.unlink(missing_ok=True)
        raise
    return spool


def _with_majority(
    spool: Path, majorities: dict[str, int | None], missing: _Missing
) -> Iterator[str]:
    """The spool's lines with each item's reference set to its annotators' majority."""
    for line in read_lines(spool):
        it = Item.model_validate_json(line.text)
        it.expected = majorities.get(it.id)
        missing.add(it)
        yield it.model_dump_json() + "\n"


def _spooled(items: Iterator[Item], spool: Path) -> Path:
    """``items`` written to ``spool`` as they come, a line each; the file is removed when
    reading them fails (a bad row, an unreadable source, Ctrl-C)."""
    try:
        with spool.open("w", encoding="utf-8") as out:
            for it in items:
                out.write(it.model_dump_json() + "\n")
    except BaseException:
        spool.unlink(missing_ok=True)
        raise
    return spool


def _spool_folder(cache_dir: Path | None) -> Path | None:
    """The items cache folder beside ``cache_dir`` (None: the system's temporary folder)."""
    if cache_dir is None:
        return None
    folder = Path(cache_dir).parent / "items"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _spool_file(folder: Path | None, kind: str) -> Path:
    """A new spool file of ``kind`` (the source's format) named by this process's id; those
    of processes that are gone (a killed run leaves its spool behind) are removed first."""
    if folder is not None:
        remove_orphans(folder, kind)
    fd, name = tempfile.mkstemp(prefix=f"{kind}-{os.getpid()}-", suffix=".jsonl", dir=folder)
    os.close(fd)
    return Path(name)


@dataclass
class _Missing:
    """The items without a reference, counted as they pass: the first five ids kept to name."""

    seen: int = 0
    count: int = 0
    ids: list[str] = field(default_factory=list)

    def add(self, item: Item) -> None:
        self.seen += 1
        if item.expected is None:
            self.count += 1
            if len(self.ids) < 5:
                self.ids.append(item.id)

    def shown(self) -> str:
        return ", ".join(self.ids) + (", ..." if self.count > len(self.ids) else "")


def _toolemu_items(data: DataConfig, scale: Scale) -> Iterator[Item]:
    """ToolEmu trajectories a line at a time, each with its toolkits' descriptions and its
    reference from the evaluator file (read a line at a time; its scores and ids kept, not the
    evaluator's reasoning). The lines without a score are an error before the first item,
    naming them."""
    scan = scan_toolemu_trajectories(data.path)
    by_line: dict[int, dict] = {}
    if data.expected_from:
        evals = load_toolemu_evaluations(data.expected_from, key=data.expected_key, keep_raw=False)
        by_line, _ = pair_evaluations(evals, scan.count, path=data.expected_from)
        if data.missing_expected == "error":
            _refuse_unscored(by_line, scan.count, data.expected_from)
    # with ``toolkits_path`` each case's toolkits are checked (an unknown one is an error naming
    # the file and row) and their specs handed over; the specs are not kept in the item (its
    # meta is in the run's data fingerprint), only their rendered descriptions
    for it in iter_toolemu_trajectories(data.path, scan=scan, toolkits_path=data.toolkits or None):
        specs = it.meta.pop("toolkit_specs", None)
        if specs is not None:
            it.meta["tool_descriptions"] = render_toolkit_descriptions(specs, it.meta["toolkits"])
        e = by_line.get(it.meta["line"])
        if e is not None and e["score"] is not None:
            try:
                it.expected = scale.coerce(e["score"])
            except ValueError as exc:
                raise DataError(
                    str(exc), path=data.expected_from, row=e["line"] + 1, field="eval_scores"
                ) from None
        yield it


def _refuse_unscored(by_line: dict[int, dict], trajectories: int, evaluations: str) -> None:
    """The one-line error for trajectories without a reference: those the evaluator file has
    no line for (named by their trajectory lines: its lines pair by ``eval_id``, so the
    evaluator file's own line numbers would point at other trajectories' scores), else its
    lines with no score it can read (named by their own line numbers)."""
    unpaired = [line + 1 for line in range(trajectories) if line not in by_line]
    if unpaired:
        shown = ", ".join(map(str, unpaired[:5])) + (", ..." if len(unpaired) > 5 else "")
        raise DataError(
            f"no evaluator line for {len(unpaired)} of {trajectories} trajectories (trajectory "
            f"lines {shown}); evaluate them, or set data.missing_expected: keep to judge those "
            "items without a reference",
            path=evaluations,
            field="eval_id",
        )
    unscored = sorted(e["line"] + 1 for e in by_line.values() if e.get("score") is None)
    if unscored:
        raise missing_labels_error(unscored, trajectories, evaluations, "eval_scores")


def _spooled_pairs(
    data: DataConfig, scale: Scale, cache_dir: Path | None, notes: dict | None
) -> Path:
    """Labelled pairs of the table, in a spool file beside the items cache in id order: the
    table is read row by row and paired a group at a time (:func:`assay.data.iter_pairs`);
    ``notes["pairs"]`` (when a dict is passed) gets what was built and skipped."""
    from assay.errors import ConfigError
    from assay.programs import is_pairwise

    if data.format != "table":
        raise ConfigError("data.pairs: pairs are built from a table (data.format: table)")
    if not is_pairwise(scale):
        raise ConfigError(
            f"data.pairs: pairs need the pairwise scale (task: pairwise; categorical A|B|tie), "
            f"not {scale.describe()}"
        )
    rows = iter_table(
        data.path,
        columns=data.columns.model_copy(update={"expected": None}),
        split=data.split,
        cache_dir=cache_dir,
        suggest_format=False,
    )
    counts: dict[str, int] = {}
    pairs = iter_pairs(rows, data.pairs, path=data.path, counts=counts)  # type: ignore[arg-type]
    spool = _spooled(pairs, _spool_file(_spool_folder(cache_dir), "pairs"))
    if notes is not None:
        notes["pairs"] = counts
    return spool


def left_out_line(left_out: dict[str, int], errored: list[str] | None = None) -> str:
    """What a run's items left out of their source (``notes["left_out"]`` of
    :func:`assay.inputs.load_items`: ``{"errored_samples": 2}``; with ``data.annotators`` on
    MLflow traces, ``machine_assessments``), in words; ``errored``: the first errored samples
    or traces named, each with its error or state (``notes["errored_samples"]``)."""
    said = []

    def named(n: int) -> str:
        more = ", ..." if n > len(errored or []) else ""
        return f" ({'; '.join(errored)}{more})" if errored else ""

    if n := left_out.get("errored_samples", 0):
        said.append(f"{n} sample{'s' if n != 1 else ''} that errored in the Inspect run")
        said[-1] += named(n)
    if n := left_out.get("unfinished_samples", 0):
        said.append(
            f"{n} sample{'s' if n != 1 else ''} that never ran (the Inspect eval did not finish)"
        )
    if n := left_out.get("errored_traces", 0):
        said.append(
            f"{n} trace{'s' if n != 1 else ''} that did not finish (state ERROR or IN_PROGRESS)"
            + named(n)
        )
    if left_out.get("unfinished_log"):
        said.append(
            "the samples that never ran (the Inspect eval did not finish; its log does "
            "not say how many it set out to run)"
        )
    if said:
        said[-1] += " (data.errored_samples: skip)"
    if n := left_out.get("later_epochs", 0):
        said.append(
            f"{n} later epoch{'s' if n != 1 else ''} of the Inspect samples (data.epochs: first)"
        )
    if n := left_out.get("machine_assessments", 0):
        said.append(
            f"{n} assessment{'s' if n != 1 else ''} an LLM judge or code logged, "
            "not an annotator (data.annotators reads human ones)"
        )
    return f"left out: {'; '.join(said)}"
