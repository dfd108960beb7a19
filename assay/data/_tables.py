"""Tables (CSV, JSON, JSONL, Parquet, Hugging Face hub data sets) read into Items via ``datasets``."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.data._common import as_int_label, is_missing, jsonable
from assay.data._reading import read_rows
from assay.errors import ConfigError, DataError, quoted
from assay.scale import Scale
from assay.types import Item

ROW_ID = "@row"


class ColumnMap(BaseModel):
    """Which table columns hold an Item's fields; ``None`` means the table has no such column.

    ``id: "@row"`` numbers the items by data row (1, 2, ...) for tables paired by position.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(
        default=None,
        description="the id column; '@row' numbers the rows; none: a hash of request and response",
    )
    request: str | None = Field(default="request", description="the request column (or none)")
    response: str | None = Field(default="response", description="the response column (or none)")
    expected: str | None = Field(
        default="expected",
        description="the reference label column, read by the judge's scale: its label names, "
        "its scores, or true/false words where they cannot be confused with the names (or none)",
    )
    generator: str | None = Field(
        default=None,
        description="the column naming the model that wrote each response (a model string or "
        "family, e.g. openai/gpt-4o or llama): assay evaluate then measures the judge's "
        "preference for its own family's outputs",
    )

    @model_validator(mode="after")
    def _one_column_per_role(self) -> ColumnMap:
        roles: dict[str, str] = {}
        for role, column in self.mapped().items():
            if column in roles:
                raise ValueError(
                    f"column '{column}' is mapped to both {roles[column]} and {role}: each "
                    "role reads a column of its own"
                )
            roles[column] = role
        return self

    def mapped(self) -> dict[str, str]:
        """Role → column name, for the roles that are mapped to a column."""
        return {k: v for k, v in self.model_dump().items() if v is not None and v != ROW_ID}


IN_META = ("generator",)
"""Roles whose column stays in an Item's ``meta`` under its own name (no Item field holds it)."""


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


def _text(row: dict[str, Any], column: str | None, origin: str, row_no: int) -> str:
    """A row's request or response ("" when the role is mapped to no column). A JSON null, a
    key the row lacks or a Parquet null is refused: judged as "", a response the table does
    not have would get a verdict of its own (an empty cell of a CSV file, or ``""`` in JSON, is
    an empty text and read as one)."""
    if not column:
        return ""
    value = row[column]
    if value is None:
        raise DataError(
            'no value (null, or the key is missing); an empty text is written ""',
            path=origin,
            row=row_no,
            field=column,
        )
    return _text_cell(value)


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
    suggest_format: bool = True,
) -> list[Item]:
    """Read a CSV/TSV/JSON/JSONL/Parquet file or a hub data set (``owner/name``) into Items
    (:func:`iter_table`, as a list)."""
    return list(
        iter_table(
            path_or_name,
            columns=columns,
            scale=scale,
            split=split,
            limit=limit,
            cache_dir=cache_dir,
            format=format,
            missing_expected=missing_expected,
            suggest_format=suggest_format,
        )
    )


def iter_table(
    path_or_name: str,
    *,
    columns: ColumnMap,
    scale: Scale | None = None,
    split: str = "train",
    limit: int | None = None,
    cache_dir: str | Path | None = None,
    format: str | None = None,
    missing_expected: Literal["keep", "error"] = "keep",
    suggest_format: bool = True,
) -> Iterator[Item]:
    """The Items of a CSV/TSV/JSON/JSONL/Parquet file or a hub data set (``owner/name``), made
    as they are read (the rows come from ``datasets``' memory-mapped Arrow files in batches),
    so a table larger than memory can be read. An error about a column comes before the first
    item; one about a row when it is reached; one about missing labels after the last item.

    Rows are numbered from 1 (the first data row) in error messages. ``expected`` is read with
    ``scale.coerce``; an empty cell gives None (the item has no reference label) with
    ``missing_expected="keep"``, and a DataError naming the first such row with ``"error"``
    (what ``assay evaluate`` uses unless told otherwise); ids come from the id column or a content hash;
    every unmapped column goes to ``meta``. ``split`` applies to hub data sets only (a local
    file refuses any other than ``train``). Without a
    ``cache_dir`` the ``datasets`` cache lives in a temporary directory that is removed.
    ``format`` names the table format where the extension does not (``csv``, ``tsv``,
    ``json``, ``jsonl``, ``parquet``); an extension that names none is an error saying to
    rename the file, and to pass ``format=`` unless ``suggest_format`` is False (a caller
    reading a file named in a config or on the command line, which have no such option).
    """
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be a positive number of rows, not {limit}")
    origin, dataset = read_rows(
        str(path_or_name),
        format=format,
        text_columns=(columns.id, columns.request, columns.response),
        split=split,
        cache_dir=cache_dir,
        suggest_format=suggest_format,
    )

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

    mapped = {c for role, c in columns.mapped().items() if role not in IN_META}
    count = 0
    first_row: dict[str, int] = {}
    unlabelled: list[int] = []
    for row_no, row in enumerate(_rows(dataset), start=1):
        request = _text(row, columns.request, origin, row_no)
        response = _text(row, columns.response, origin, row_no)
        item_id = _item_id(row, columns, row_no, origin, request, response)
        named = item_id if columns.id not in (None, ROW_ID) else None
        expected = _expected(row, columns.expected, scale, origin, row_no, named)
        if expected is None and columns.expected is not None:
            unlabelled.append(row_no)
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
        count += 1
        yield Item(id=item_id, request=request, response=response, expected=expected, meta=meta)
    if unlabelled and missing_expected == "error":
        raise missing_labels_error(unlabelled, count, origin, columns.expected)


_BATCH_ROWS = 1024


def _rows(dataset: Any) -> Iterator[dict[str, Any]]:
    """The data set's rows as dicts (its columns in order), a batch at a time."""
    for batch in dataset.iter(batch_size=_BATCH_ROWS):
        names = list(batch)
        for values in zip(*(batch[c] for c in names), strict=True):
            yield dict(zip(names, values, strict=True))


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
    item_id = _text_cell(row[columns.id])
    if item_id != item_id.strip():  # trimmed, "a" and "a " would be one item; kept, two
        raise DataError(
            f"id {item_id!r} begins or ends with whitespace; remove it (ids are matched "
            "exactly across files)",
            path=origin,
            row=row_no,
            field=columns.id,
        )
    return item_id


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
    row: dict[str, Any],
    column: str | None,
    scale: Scale | None,
    origin: str | Path,
    row_no: int,
    item_id: str | None,
) -> int | None:
    """The row's reference label read by ``scale`` (None for an empty cell); a DataError naming
    the row, its item (``item_id``, where the table has an id column) and the column when the
    scale cannot place it."""
    if column is None:
        return None
    value = row[column]
    if is_missing(value):
        return None
    try:
        return scale.coerce(value) if scale is not None else as_int_label(value)
    except ValueError as exc:
        item = f"item {quoted(item_id)}: " if item_id is not None else ""
        hint = ""
        if scale is None:
            word = str(value).strip().lower() if isinstance(value, str | bool) else ""
            binary = ", e.g. --scale binary" if word in ("true", "false") else ""
            hint = f" (pass a scale to read labels{binary})"
        raise DataError(f"{item}{exc}{hint}", path=origin, row=row_no, field=column) from None
