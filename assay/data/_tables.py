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
from typing import Any, Literal

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


def _check_utf8(path: Path) -> None:
    """DataError naming the line (and data row) of the first byte that is not UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column}; "
            "save the file as UTF-8",
            path=path,
            row=line - 1 if line > 1 else None,
        ) from None


def _check_json_rows(path: Path) -> None:
    """A JSON table is a list of objects or JSON Lines: refuse a single object (it would be
    read as a one-row table) and a list of anything but objects."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return  # JSON Lines, or an error the loader reports with its line
    lines = sum(1 for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip())
    one_record = path.suffix.lower() in (".jsonl", ".ndjson") and lines == 1
    if isinstance(value, dict) and not one_record:
        raise DataError(
            "a single JSON object, not a table: use a list of row objects ([{...}, {...}]) "
            "or JSON Lines (one object per line, .jsonl)",
            path=path,
        )
    if isinstance(value, list):
        for i, row in enumerate(value, start=1):
            if not isinstance(row, dict):
                raise DataError(
                    f"row is a JSON {type(row).__name__}, not an object", path=path, row=i
                )


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception ``exc`` was raised from (datasets wraps pandas' and pyarrow's)."""
    seen = {id(exc)}
    while (exc.__cause__ or exc.__context__) is not None:
        nxt = exc.__cause__ or exc.__context__
        if id(nxt) in seen or isinstance(nxt, UnicodeDecodeError):
            break
        seen.add(id(nxt))
        exc = nxt  # type: ignore[assignment]
    return exc


def _load_local(path: Path, fmt: str, columns: ColumnMap, cache_dir: str | Path | None) -> Any:
    """Read one local file with ``datasets.load_dataset`` into an in-memory Dataset."""
    builder = "csv" if fmt == "tsv" else fmt
    if builder in ("csv", "json"):
        _check_utf8(path)
    if builder == "json":
        _check_json_rows(path)
    kwargs: dict[str, Any] = {}
    if builder == "csv":
        kwargs["sep"] = "\t" if fmt == "tsv" else ","
        kwargs.update(_csv_options(path, kwargs["sep"], columns))
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
            cause = _root_cause(exc)
            detail = " ".join(str(cause).split())[:300]
            line = re.search(r"\bline (\d+)", detail) if builder == "csv" else None
            raise DataError(
                f"cannot read as {fmt} ({type(cause).__name__}: {detail})",
                path=path,
                row=int(line.group(1)) - 1 if line and int(line.group(1)) > 1 else None,
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
    missing_expected: Literal["keep", "error"] = "keep",
) -> list[Item]:
    """Read a CSV/TSV/JSON/JSONL/Parquet file or a hub data set (``owner/name``) into Items.

    Rows are numbered from 1 (the first data row) in error messages. ``expected`` is read with
    ``scale.coerce``; an empty cell gives None (the item has no reference label) with
    ``missing_expected="keep"``, and a DataError naming the first such row with ``"error"``
    (what ``assay evaluate`` uses unless told otherwise); ids come from the id column or a content hash;
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
    unlabelled: list[int] = []
    for row_no, row in enumerate(dataset.to_list(), start=1):
        request = _text_cell(row[columns.request]) if columns.request else ""
        response = _text_cell(row[columns.response]) if columns.response else ""
        expected = _expected(row, columns.expected, scale, origin, row_no)
        if expected is None and columns.expected is not None:
            unlabelled.append(row_no)
        item_id = _item_id(row, columns, row_no, origin, request, response)
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
    if unlabelled and missing_expected == "error":
        raise missing_labels_error(unlabelled, len(items), origin, columns.expected)
    return items


def _item_id(
    row: dict[str, Any],
    columns: ColumnMap,
    row_no: int,
    origin: str | Path,
    request: str,
    response: str,
) -> str:
    """The row's id: its number (``@row``), its id column, or a hash of its content."""
    if columns.id == ROW_ID:
        return str(row_no)
    if columns.id is None:
        return Item.content_id(request, response)
    if is_missing(row[columns.id]):
        raise DataError("empty id", path=origin, row=row_no, field=columns.id)
    return _text_cell(row[columns.id]).strip()


def missing_labels_error(
    rows: list[int], total: int, origin: str | Path, field: str | None
) -> DataError:
    """The one-line error for reference labels that are empty in some rows."""
    shown = ", ".join(map(str, rows[:5])) + (", ..." if len(rows) > 5 else "")
    return DataError(
        f"empty reference label in {len(rows)} of {total} rows (rows {shown}); fill them in, or "
        "set data.missing_expected: keep to judge those items without a reference",
        path=origin,
        row=rows[0],
        field=field,
    )


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
