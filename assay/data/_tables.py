"""Tables (CSV, JSON, JSONL, Parquet, Hugging Face hub data sets) read into Items via ``datasets``."""

from __future__ import annotations

import contextlib
import csv
import difflib
import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.data._common import as_int_label, is_missing, jsonable
from assay.errors import ConfigError, DataError
from assay.scale import Scale
from assay.types import Item

_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_FORMAT_NAMES = {"csv": "csv", "tsv": "tsv", "json": "json", "jsonl": "json", "parquet": "parquet"}
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


ROW_ID = "@row"


class ColumnMap(BaseModel):
    """Which table columns hold an Item's fields; ``None`` means the table has no such column.

    ``id: "@row"`` numbers the items by data row (1, 2, ...) for tables paired by position.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    request: str | None = "request"
    response: str | None = "response"
    expected: str | None = "expected"

    def mapped(self) -> dict[str, str]:
        """Item field → column name, for the fields that are mapped to a column."""
        return {k: v for k, v in self.model_dump().items() if v is not None and v != ROW_ID}


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[Any]:
    """Import ``datasets`` with progress bars and error logs off for the duration, then restore them."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    verbosity = datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # failures become DataErrors
    try:
        yield datasets
    finally:
        datasets.logging.set_verbosity(verbosity)
        if not was_disabled:
            datasets.enable_progress_bars()


@contextlib.contextmanager
def _cache(cache_dir: str | Path | None) -> Iterator[str]:
    """The caller's cache directory, or a temporary one removed afterwards (nothing is left behind)."""
    if cache_dir is not None:
        yield str(Path(cache_dir).expanduser())
        return
    with tempfile.TemporaryDirectory(prefix="assay-datasets-") as tmp:
        yield tmp


def _first_bad_json_line(path: Path) -> tuple[int, str] | None:
    """Locate the first line of a JSON Lines file that does not parse (for a precise error)."""
    try:
        with path.open(encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        json.loads(text)
        return None  # a whole-file JSON document: the problem is elsewhere
    except json.JSONDecodeError:
        pass
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError as exc:
            return lineno, exc.msg
    return None


# pandas' default NA spellings, applied to every column except the text ones (id/request/response)
_PANDAS_NA = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND")
_PANDAS_NA += ("1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def _csv_options(path: Path, sep: str, columns: ColumnMap) -> dict[str, Any]:
    """pandas options that keep id/request/response cells as written ("N/A", "None", "007")."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            header = next(csv.reader(fh, delimiter=sep), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    text = {c for c in (columns.id, columns.request, columns.response) if c in header}
    return {
        "converters": {c: str for c in text},
        "keep_default_na": False,
        "na_values": {c: list(_PANDAS_NA) for c in header if c not in text},
    }


class _Rows:
    """The rows of a table read with pandas, with the part of ``datasets.Dataset``'s surface
    that :func:`load_table` uses."""

    def __init__(self, rows: list[dict[str, Any]], column_names: list[str]):
        self._rows = rows
        self.column_names = column_names

    def __len__(self) -> int:
        return len(self._rows)

    def select(self, indices: range) -> _Rows:
        return _Rows([self._rows[i] for i in indices], self.column_names)

    def to_list(self) -> list[dict[str, Any]]:
        return self._rows


_DIRECT_MAX_BYTES = 32 * 1024 * 1024  # datasets reads in 10,000-row chunks; stay well below


def _read_csv(path: Path, kwargs: dict[str, Any]) -> _Rows:
    """A CSV/TSV file read with pandas directly — what ``datasets``' csv builder does, with the
    same options, minus ``datasets``' import and caching (a second of every first run). NaN
    cells become None as in the Arrow round trip (they read as missing either way)."""
    import pandas as pd

    frame = pd.read_csv(path, **kwargs)
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return _Rows(rows, [str(c) for c in frame.columns])


def _load_local(path: Path, fmt: str, columns: ColumnMap, cache_dir: str | Path | None) -> Any:
    """Read one local file into an in-memory table: a CSV/TSV with pandas, any other format
    (or a very large CSV) with ``datasets.load_dataset``."""
    builder = "csv" if fmt == "tsv" else fmt
    kwargs: dict[str, Any] = {}
    if builder == "csv":
        kwargs["sep"] = "\t" if fmt == "tsv" else ","
        kwargs.update(_csv_options(path, kwargs["sep"], columns))
        if path.stat().st_size <= _DIRECT_MAX_BYTES:
            try:
                return _read_csv(path, kwargs)
            except Exception:  # read it the datasets way, which reports what is wrong
                pass
    with _quiet_datasets() as datasets, _cache(cache_dir) as cache:
        try:
            return datasets.load_dataset(
                builder,
                data_files=str(path),
                split="train",
                cache_dir=cache,
                keep_in_memory=True,
                **kwargs,
            )
        except Exception as exc:  # pandas, pyarrow and datasets each raise their own errors
            if builder == "json":
                bad = _first_bad_json_line(path)
                if bad is not None:
                    raise DataError(
                        f"line {bad[0]} is not valid JSON ({bad[1]})", path=path, row=bad[0]
                    ) from None
            if "No columns to parse" in str(exc) or path.stat().st_size == 0:
                raise DataError("the file is empty", path=path) from None
            if "corresponds to no data" in str(exc):
                raise DataError("no data rows", path=path) from None
            detail = " ".join(str(exc).split())[:300]
            raise DataError(
                f"cannot read as {fmt} ({type(exc).__name__}: {detail})", path=path
            ) from None


def _load_hub(name: str, split: str, cache_dir: str | Path | None) -> Any:
    """Load a Hugging Face hub data set; any failure (offline, unknown name) is a DataError."""
    with _quiet_datasets() as datasets, _cache(cache_dir) as cache:
        try:
            return datasets.load_dataset(name, split=split, cache_dir=cache, keep_in_memory=True)
        except Exception as exc:
            detail = " ".join(str(exc).split())[:300]
            raise DataError(
                "not a local file, and the Hugging Face hub could not be reached or has no such "
                f"data set/split '{split}' ({type(exc).__name__}: {detail})",
                path=name,
            ) from None


def _format_of(path: Path, format: str | None) -> str:
    """The table format: the ``format`` argument, else the file extension."""
    if format is not None:
        fmt = _FORMAT_NAMES.get(format.lower())
        if fmt is None:
            raise ConfigError(
                f"unknown table format {format!r}: use one of {sorted(_FORMAT_NAMES)}"
            )
        return fmt
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(
            f"cannot tell the format from the extension '{path.suffix}': use one of "
            f"{', '.join(sorted(_FORMATS))} or pass format=",
            path=path,
        )
    return fmt


def _text_cell(value: Any) -> str:
    """A request/response cell as text (an empty or NaN cell is "")."""
    if is_missing(value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def load_table(
    path_or_name: str,
    *,
    columns: ColumnMap,
    scale: Scale | None = None,
    split: str = "train",
    limit: int | None = None,
    cache_dir: str | Path | None = None,
    format: str | None = None,
) -> list[Item]:
    """Read a CSV/TSV/JSON/JSONL/Parquet file or a hub data set (``owner/name``) into Items.

    Rows are numbered from 1 (the first data row) in error messages. ``expected`` is read with
    ``scale.coerce`` (an empty cell gives None); ids come from the id column or a content hash;
    every unmapped column goes to ``meta``. ``split`` applies to hub data sets only. Without a
    ``cache_dir`` the ``datasets`` cache lives in a temporary directory that is removed.
    """
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be a positive number of rows, not {limit}")
    source = str(path_or_name)
    path = Path(source).expanduser()
    if path.is_file():
        origin: str | Path = path.resolve()
        dataset = _load_local(path.resolve(), _format_of(path, format), columns, cache_dir)
    elif path.exists():
        raise DataError("not a file", path=path)
    elif _HUB_NAME.fullmatch(source) and path.suffix.lower() not in _FORMATS:
        origin = source
        dataset = _load_hub(source, split, cache_dir)
    else:
        raise DataError("file not found", path=path)

    available = list(dataset.column_names)
    for field, column in columns.mapped().items():
        if column not in available:
            close = difflib.get_close_matches(column, available, n=1, cutoff=0.5)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise DataError(
                f"no column '{column}' (mapped to {field}){hint}; "
                f"available columns: {', '.join(available)}",
                path=origin,
                field=column,
            )
    if len(dataset) == 0:
        raise DataError("no data rows", path=origin)
    if limit is not None and limit < len(dataset):
        dataset = dataset.select(range(limit))

    mapped = set(columns.mapped().values())
    items: list[Item] = []
    first_row: dict[str, int] = {}
    for row_no, row in enumerate(dataset.to_list(), start=1):
        request = _text_cell(row[columns.request]) if columns.request else ""
        response = _text_cell(row[columns.response]) if columns.response else ""
        expected = _expected(row, columns.expected, scale, origin, row_no)
        if columns.id == ROW_ID:
            item_id = str(row_no)
        elif columns.id is not None:
            raw_id = row[columns.id]
            if is_missing(raw_id):
                raise DataError("empty id", path=origin, row=row_no, field=columns.id)
            item_id = _text_cell(raw_id).strip()
        else:
            item_id = Item.content_id(request, response)
        if item_id in first_row:
            how = "" if columns.id else " (same request and response; map an id column)"
            raise DataError(
                f"duplicate id '{item_id}', first seen in row {first_row[item_id]}{how}",
                path=origin,
                row=row_no,
                field=columns.id or "id",
            )
        first_row[item_id] = row_no
        meta = {k: jsonable(v) for k, v in row.items() if k not in mapped}
        items.append(
            Item(id=item_id, request=request, response=response, expected=expected, meta=meta)
        )
    return items


def _expected(
    row: dict[str, Any], column: str | None, scale: Scale | None, origin: str | Path, row_no: int
) -> int | None:
    """The row's reference label on ``scale`` (None for an empty cell); DataError when off-scale."""
    if column is None:
        return None
    value = row[column]
    if is_missing(value):
        return None
    try:
        return scale.coerce(value) if scale is not None else as_int_label(value)
    except ValueError as exc:
        hint = "" if scale is not None else " (pass a scale to read labels)"
        raise DataError(f"{exc}{hint}", path=origin, row=row_no, field=column) from None
