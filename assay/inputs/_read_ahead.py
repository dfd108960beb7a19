"""A run's local table read ahead: the command line's helper reads it while the command imports
what its run needs (:func:`assay.data.read_ahead`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from assay.data import read_ahead
from assay.inputs._config import DataConfig


def read_table_ahead(data: Mapping[str, object]) -> None:
    """Announce the table a config's ``data`` mapping (as read, its path made absolute) names,
    when the run reads it as a local table: its rows are read elsewhere meanwhile where the
    command line can. A mapping that does not validate is left to the run to report."""
    try:
        config = DataConfig.model_validate(data)
    except ValidationError:
        return
    if config.format != "table" or config.pairs is not None:
        return
    columns = config.columns
    read_ahead(Path(config.path).expanduser(), (columns.id, columns.request, columns.response))
