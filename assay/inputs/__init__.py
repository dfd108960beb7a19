"""The inputs of a run: its config (the models every runner's config builds on, the YAML loader,
the config as read before it is validated), its items read from the data config, several
annotators' labels, and stratified samples; the items by position, read from disk; and when two
items are one item (the text the judge read, normalised as a person reads it, or one Inspect
sample: :mod:`._item_text`), which every runner that counts items takes as one.

Names load on first use (PEP 562): a command imports only what it reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_names

_WHERE = {
    "BootstrapConfig": "_config",
    "DataConfig": "_config",
    "read_table_ahead": "_read_ahead",
    "EvaluateConfig": "_config",
    "RetryConfig": "_config",
    "RunConfig": "_config",
    "TrackingConfig": "_config",
    "first_error": "_config",
    "load_config": "_config",
    "without_write_back": "_config",
    "ResolvedConfig": "_resolve",
    "named_files": "_resolve",
    "resolve_config": "_resolve",
    "data_fingerprint": "_items",
    "item_set_tags": "_items",
    "left_out_line": "_items",
    "load_items": "_items",
    "stream_items": "_items",
    "ItemIndex": "_items",
    "ItemStream": "_items",
    "sample_of": "_items",
    "repeated_samples": "_items",
    "epochs_line": "_items",
    "samples_of": "_items",
    "AnnotationRows": "_annotations",
    "majority": "_annotations",
    "read_annotations": "_annotations",
    "stratified_sample": "_sample",
    "StoredItems": "_stored",
    "CONFUSABLES": "_item_text",
    "NORMALISED": "_item_text",
    "Rule": "_item_text",
    "fingerprints_under": "_item_text",
    "item_keys": "_item_text",
    "key_groups": "_item_text",
    "same_items": "_item_text",
    "used_keys": "_item_text",
}

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from assay.inputs._annotations import AnnotationRows, majority, read_annotations
    from assay.inputs._config import (
        BootstrapConfig,
        DataConfig,
        EvaluateConfig,
        RetryConfig,
        RunConfig,
        TrackingConfig,
        first_error,
        load_config,
        without_write_back,
    )
    from assay.inputs._item_text import (
        CONFUSABLES,
        NORMALISED,
        Rule,
        fingerprints_under,
        item_keys,
        key_groups,
        same_items,
        used_keys,
    )
    from assay.inputs._items import (
        ItemIndex,
        ItemStream,
        data_fingerprint,
        epochs_line,
        item_set_tags,
        left_out_line,
        load_items,
        repeated_samples,
        sample_of,
        samples_of,
        stream_items,
    )
    from assay.inputs._read_ahead import read_table_ahead
    from assay.inputs._resolve import ResolvedConfig, named_files, resolve_config
    from assay.inputs._sample import stratified_sample
    from assay.inputs._stored import StoredItems

__all__ = [
    "AnnotationRows",
    "BootstrapConfig",
    "DataConfig",
    "read_table_ahead",
    "EvaluateConfig",
    "ResolvedConfig",
    "RetryConfig",
    "RunConfig",
    "TrackingConfig",
    "data_fingerprint",
    "first_error",
    "item_set_tags",
    "left_out_line",
    "load_config",
    "load_items",
    "stream_items",
    "ItemIndex",
    "ItemStream",
    "majority",
    "named_files",
    "read_annotations",
    "resolve_config",
    "epochs_line",
    "repeated_samples",
    "sample_of",
    "samples_of",
    "stratified_sample",
    "StoredItems",
    "without_write_back",
    "CONFUSABLES",
    "NORMALISED",
    "Rule",
    "fingerprints_under",
    "item_keys",
    "key_groups",
    "same_items",
    "used_keys",
]
assert sorted(__all__) == sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE)
