"""Reading a table file or a hub data set into rows: pandas for CSV/TSV, ``datasets`` for the
rest, every failure a one-line DataError naming the file (and line where one is known)."""

from __future__ import annotations

import contextlib
import csv
import json
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypedDict

from assay import _json
from assay._files import sha256_file
from assay.errors import ConfigError, DataError

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


def read_rows(
    source: str,
    *,
    format: str | None,
    text_columns: tuple[str | None, ...],
    split: str,
    cache_dir: str | Path | None,
    suggest_format: bool = True,
) -> tuple[str | Path, Any]:
    """``(origin, table)``: a local file (resolved path) or a hub data set (``owner/name``).

    ``text_columns`` are kept as written ("N/A", "007"); the table has ``column_names``,
    ``len``, ``select(range)`` and ``to_list()``. ``suggest_format``: an unknown extension's
    error suggests passing ``format=`` (the caller has that option)."""
    path = Path(source).expanduser()
    if path.is_file() and split != "train":
        raise ConfigError(
            f"{path}: split '{split}' is for a Hugging Face hub data set; a local file has none"
        )
    if path.is_file():
        return path.resolve(), _load_local(
            path.resolve(), _format_of(path, format, suggest_format), text_columns, cache_dir
        )
    if path.exists():
        raise DataError("not a file", path=path)
    if _HUB_NAME.fullmatch(source) and path.suffix.lower() not in _FORMATS:
        return source, _load_hub(source, split, cache_dir)
    raise DataError("file not found", path=path)


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
        _json.loads(text)
        return None  # a whole-file JSON document: the problem is elsewhere
    except json.JSONDecodeError:
        pass
    for line in _json.split_lines(text):
        try:
            _json.loads(line.text)
        except json.JSONDecodeError as exc:
            return line.number, exc.msg
    return None


# pandas' default NA spellings, applied to every column except the text ones (id/request/response)
_PANDAS_NA = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND")
_PANDAS_NA += ("1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def _header(path: Path, sep: str) -> list[str]:
    """The column names of a CSV/TSV file's first line ([] when it cannot be read: the table
    reader reports why)."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            return next(csv.reader(fh, delimiter=sep), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _check_header(path: Path, sep: str) -> None:
    """DataError naming a column the header names twice: pandas would read the second as
    ``name.1``, and the column map would silently read the first."""
    seen: dict[str, int] = {}
    for n, name in enumerate(_header(path, sep), start=1):
        if name in seen:
            raise DataError(
                f"the header names column '{name}' twice (columns {seen[name]} and {n}); "
                "rename one",
                path=path,
                field=name,
            )
        seen[name] = n


def _csv_options(path: Path, sep: str, text_columns: tuple[str | None, ...]) -> dict[str, Any]:
    """pandas options that keep id/request/response cells as written ("N/A", "None", "007");
    in a table of one column, a blank line is a row whose cell is empty (a spreadsheet writes
    an empty cell so), not a line to skip — skipped, it would move every later row up one, and
    a table paired with another by position would pair every later row with the wrong one."""
    header = _header(path, sep)
    if not header:
        return {}
    text = {c for c in text_columns if c in header}
    return {
        "converters": {c: str for c in text},
        "keep_default_na": False,
        "na_values": {c: list(_PANDAS_NA) for c in header if c not in text},
        "skip_blank_lines": len(header) > 1,
        # never the first field of rows longer than the header as an index (every column read
        # one to the left): such a row is refused (:func:`_field_count_problem`)
        "index_col": False,
    }


@contextlib.contextmanager
def _field_count_size(size: int) -> Iterator[None]:
    """The csv module's bound on a field raised to ``size`` characters for the duration."""
    bound = csv.field_size_limit()
    csv.field_size_limit(max(bound, size))
    try:
        yield
    finally:
        csv.field_size_limit(bound)


def _field_count_problem(path: Path, sep: str) -> DataError | None:
    """A DataError naming the first data row with another number of fields than the header,
    or None. pandas pads a short row with empty cells (an empty response, judged) and drops
    the fields of an over-long first row (or reads them as an index): its own parse cannot
    tell. Rows are numbered as pandas numbers them: blank lines (only whitespace) are not rows
    in a table of more than one column; the line named is the row's first."""
    with _field_count_size(path.stat().st_size), path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=sep)
        header = next(reader, [])
        end, row = reader.line_num, 0
        try:
            for fields in reader:
                line, end = end + 1, reader.line_num
                blank = not fields or (len(fields) == 1 and fields[0] and not fields[0].strip())
                if blank and len(header) > 1:
                    continue
                row += 1
                if len(fields) in (len(header), 0):
                    continue
                problem = f"line {line} has {len(fields)} fields where the header has {len(header)}"
                if len(fields) > len(header):
                    return DataError(
                        f"{problem}; a cell holding the separator is quoted", path=path, row=row
                    )
                missing = header[len(fields) :]
                names = " and ".join(
                    [", ".join(missing[:-1]), missing[-1]] if missing[:-1] else missing
                )
                verb = "is" if len(missing) == 1 else "are"
                return DataError(
                    f"{problem} ({names} {verb} missing); an empty cell is a field too",
                    path=path,
                    row=row,
                    field=missing[0],
                )
        except csv.Error:
            return None  # the table reader says what is wrong
    return None


def _may_lack_fields(last: Any) -> bool:
    """Whether a table's last column (a pandas Series) has an empty cell — where a row short
    of fields shows (pandas fills a missing field as an empty one): the one case the file is
    read again, field by field (:func:`_field_count_problem`)."""
    return bool((last.isna() | (last == "")).any())


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

    def iter(self, batch_size: int) -> Iterator[dict[str, list[Any]]]:
        """The rows ``batch_size`` at a time, each batch a dict of columns (as datasets')."""
        for start in range(0, len(self._rows), batch_size):
            rows = self._rows[start : start + batch_size]
            yield {c: [r[c] for r in rows] for c in self.column_names}


_DIRECT_MAX_BYTES = 32 * 1024 * 1024  # datasets reads in 10,000-row chunks; stay well below


def _read_csv(path: Path, kwargs: dict[str, Any]) -> _Rows:
    """A CSV/TSV file read with pandas directly — what ``datasets``' csv builder does, with the
    same options, minus ``datasets``' import and caching (a second of every first run). NaN
    cells become None as in the Arrow round trip (they read as missing either way)."""
    import pandas as pd

    try:
        with _long_rows_fail():
            frame = pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.ParserWarning):
        if (problem := _field_count_problem(path, kwargs["sep"])) is not None:
            raise problem from None
        raise
    if len(frame.columns) > 1 and _may_lack_fields(frame.iloc[:, -1]):
        if (problem := _field_count_problem(path, kwargs["sep"])) is not None:
            raise problem
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return _Rows(rows, [str(c) for c in frame.columns])


@contextlib.contextmanager
def _long_rows_fail() -> Iterator[None]:
    """pandas' warning that it dropped the fields of rows longer than the header (with
    ``index_col=False``) raised as an error for the duration."""
    import pandas as pd

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "error", "Length of header or names does not match", pd.errors.ParserWarning
        )
        yield


CsvReader = Callable[..., dict[str, Any]]
"""Reads a CSV as :func:`csv_rows` does, elsewhere: ``reader(path=, sep=, text_columns=)``."""

_CSV_READER: ContextVar[CsvReader | None] = ContextVar("assay_csv_reader", default=None)


@contextlib.contextmanager
def csv_read_by(reader: CsvReader) -> Iterator[None]:
    """Within: a local CSV/TSV is read by ``reader`` — the command line's MLflow helper
    process, which imports pandas anyway and has done so by the time the table is read (~0.5 s
    of this process's start-up otherwise, on the way to the first LM call). If ``reader``
    fails for any reason, the file is read here as without it (and its errors reported so)."""
    token = _CSV_READER.set(reader)
    try:
        yield
    finally:
        _CSV_READER.reset(token)


def read_ahead(path: Path, text_columns: tuple[str | None, ...]) -> None:
    """Tell the :func:`csv_read_by` reader that the table at ``path`` (a local CSV/TSV, read
    with these ``text_columns``) will be read: a reader that can (``reader.read_ahead``) starts
    reading it now, elsewhere, while this process imports what its run needs; the read itself
    then takes those rows if the file still holds the bytes they were read from. Anything else
    (another format, a file too large or not there, no such reader) is left to the read."""
    reader = getattr(_CSV_READER.get(), "read_ahead", None)
    fmt = _FORMATS.get(path.suffix.lower())
    if reader is None or fmt not in ("csv", "tsv"):
        return
    try:
        if not path.is_file() or path.stat().st_size > _DIRECT_MAX_BYTES:
            return
    except OSError:
        return
    sep = "\t" if fmt == "tsv" else ","
    reader(path=str(path.resolve()), sep=sep, text_columns=list(text_columns))


class CsvRows(TypedDict):
    """A CSV/TSV's rows (column → cell: text, a number, a bool or None), its columns and the
    SHA-256 of the bytes they were read from, as :func:`csv_rows` sends them from another
    process (plain JSON)."""

    rows: list[dict[str, str | int | float | bool | None]]
    columns: list[str]
    sha256: str


def csv_rows(path: str, sep: str, text_columns: list[str | None]) -> CsvRows:
    """``{"rows", "columns", "sha256"}`` of a CSV/TSV read with pandas as :func:`read_rows`
    reads it — the job a :func:`csv_read_by` reader runs. Refuses (``TypeError``) a cell that
    would not survive a JSON round trip unchanged, so that the caller reads the file itself,
    and (``OSError``) a file whose bytes changed while it was read."""
    file = Path(path)
    before = sha256_file(file)
    table = _read_csv(file, {"sep": sep, **_csv_options(file, sep, tuple(text_columns))})
    rows = table.to_list()
    for row in rows:
        for value in row.values():
            if value is not None and type(value) not in (str, int, float, bool):
                raise TypeError(f"a {type(value).__name__} cell")
    if sha256_file(file) != before:
        raise OSError(f"{file} changed while it was read")
    return CsvRows(rows=rows, columns=table.column_names, sha256=before)


def _read_csv_elsewhere(path: Path, sep: str, text_columns: tuple[str | None, ...]) -> _Rows | None:
    reader = _CSV_READER.get()
    if reader is None:
        return None
    try:
        table = reader(path=str(path), sep=sep, text_columns=list(text_columns))
        return _Rows(table["rows"], table["columns"])
    except Exception:  # read here, as without it
        return None


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
    read as a one-row table), a list of anything but objects, and a file or a line over the
    bounds of :mod:`assay._json` (the table reader would fail on it with a long traceback)."""
    try:
        _json.check_size(path)
    except ValueError as exc:
        raise DataError(str(exc), path=path) from None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # an error the loader reports
    try:
        value = _json.loads(text, unique_keys=True)
    except _json.OverBound as exc:
        raise DataError(f"invalid JSON at line {exc.lineno}: {exc.msg}", path=path) from None
    except _json.DuplicateKey as exc:
        raise _duplicate_key(path, text, exc.key) from None
    except json.JSONDecodeError:
        _check_json_lines(path, text)
        return  # JSON Lines
    lines = len(_json.split_lines(text))
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


def _check_json_lines(path: Path, text: str) -> None:
    """Each line of a JSON Lines file parsed on its own: one over the bounds of
    :mod:`assay._json`, or giving a key twice, is refused naming its line; a line that does not
    parse is left to the loader, which names it."""
    for line in _json.split_lines(text):
        try:
            _json.loads(line.text, unique_keys=True)
        except _json.OverBound as exc:
            raise DataError(exc.msg, path=path, row=line.number) from None
        except _json.DuplicateKey as exc:
            raise _duplicate_key_on(path, line.number, exc.key) from None
        except json.JSONDecodeError:
            pass


def _duplicate_key_on(path: Path, line: int, key: str) -> DataError:
    """The error for a JSON Lines row (``line``) that gives ``key`` twice: ``json`` keeps the
    last value (a JSON table's row), pyarrow refuses the file without naming the line."""
    return DataError(
        f"line {line} gives key {key!r} twice; keep one", path=path, row=line, field=key
    )


def _duplicate_key(path: Path, text: str, key: str) -> DataError:
    """The error for a file whose whole-file parse met ``key`` given twice — a list of rows, or
    JSON Lines whose first row gives it — naming the row it is in (each row parsed on its own
    to find it), or the file alone where there is no such row (a single object)."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("[", start):  # JSON Lines whose first row gives it (or one object)
        try:
            _check_json_lines(path, text)
        except DataError as line_error:
            return line_error
        return DataError(f"key {key!r} given twice; keep one", path=path, field=key)
    at, row = start + 1, 0
    blank = re.compile(r"[ \t\n\r]*")
    try:
        while True:
            at = blank.match(text, at).end()  # type: ignore[union-attr]
            if text.startswith("]", at):
                break
            row += 1
            try:
                _, at = _json.UNIQUE_KEYS.raw_decode(text, at)
            except _json.DuplicateKey as exc:
                line = text.count("\n", 0, at) + 1
                return DataError(
                    f"row {row} (from line {line}) gives key {exc.key!r} twice; keep one",
                    path=path,
                    row=row,
                    field=exc.key,
                )
            at = blank.match(text, at).end()  # type: ignore[union-attr]
            if text.startswith(",", at):
                at += 1
    except (ValueError, RecursionError):
        pass
    return DataError(f"key {key!r} given twice; keep one", path=path, field=key)


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


def _load_local(
    path: Path, fmt: str, text_columns: tuple[str | None, ...], cache_dir: str | Path | None
) -> Any:
    """Read one local file into an in-memory table: a CSV/TSV with pandas, any other format
    (or a very large CSV) with ``datasets.load_dataset``."""
    builder = "csv" if fmt == "tsv" else fmt
    if builder in ("csv", "json"):
        _check_utf8(path)
    if builder == "json":
        _check_json_rows(path)
    kwargs: dict[str, Any] = {}
    if builder == "csv":
        kwargs["sep"] = "\t" if fmt == "tsv" else ","
        _check_header(path, kwargs["sep"])
        kwargs.update(_csv_options(path, kwargs["sep"], text_columns))
        if path.stat().st_size <= _DIRECT_MAX_BYTES:
            if (rows := _read_csv_elsewhere(path, kwargs["sep"], text_columns)) is not None:
                return rows
            try:
                return _read_csv(path, kwargs)
            except DataError:
                raise
            except Exception:  # read it the datasets way, which reports what is wrong
                pass
    with _quiet_datasets() as datasets, _cache(cache_dir) as cache:
        try:
            with _long_rows_fail() if builder == "csv" else contextlib.nullcontext():
                table = datasets.load_dataset(
                    builder,
                    data_files=str(path),
                    split="train",
                    cache_dir=cache,
                    keep_in_memory=True,
                    **kwargs,
                )
        except Exception as exc:  # pandas, pyarrow and datasets each raise their own errors
            if builder == "csv" and (problem := _field_count_problem(path, kwargs["sep"])):
                raise problem from None
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
    if builder == "csv" and len(table.column_names) > 1:
        last = table.data.column(table.column_names[-1]).to_pandas()  # one column, not the table
        if _may_lack_fields(last) and (problem := _field_count_problem(path, kwargs["sep"])):
            raise problem
    return table


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


def _format_of(path: Path, format: str | None, suggest_format: bool) -> str:
    """The table format: the ``format`` argument, else the file extension. An extension that
    names none is an error saying to rename the file, and to pass ``format=`` where the caller
    has that option (``suggest_format``: the Python API)."""
    if format is not None:
        fmt = _FORMAT_NAMES.get(format.lower())
        if fmt is None:
            raise ConfigError(
                f"unknown table format {format!r}: use one of {sorted(_FORMAT_NAMES)}"
            )
        return fmt
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        which = f"the extension '{path.suffix}'" if path.suffix else "the file has no extension"
        sep = " from " if path.suffix else ": "
        option = f", or pass format= ({_either(sorted(_FORMAT_NAMES))})" if suggest_format else ""
        raise DataError(
            f"cannot tell the table format{sep}{which}: rename the file to end in "
            f"{_either(sorted(_FORMATS))}{option}",
            path=path,
        )
    return fmt


def _either(names: list[str]) -> str:
    """``a, b or c``."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
