"""Stratified, seeded train / dev / test splits of the labelled items, and their checks."""

from __future__ import annotations

from typing import Any, NamedTuple

from assay.decisions import split_ids
from assay.errors import ConfigError
from assay.optimization._config import SplitConfig
from assay.scale import Scale
from assay.types import Item

MIN_PER_LABEL = 2  # items of each label in each split
SPLITS = ("train", "dev", "test")


def split_three(labels: dict[str, int], split: SplitConfig) -> dict[str, list[str]]:
    """Stratified (or not), seeded train / dev / test ids, by two calls of :func:`split_ids`."""
    strata = labels if split.stratify else dict.fromkeys(labels, 0)
    train, rest = split_ids(strata, split.train, split.seed)
    dev, test = split_ids(
        {i: strata[i] for i in rest}, split.dev / (split.dev + split.test), split.seed
    )
    return {"train": train, "dev": dev, "test": test}


def _counts(n: int, split: SplitConfig) -> tuple[int, int, int]:
    """Per-stratum sizes, with the rounding :func:`split_ids` uses."""
    train = round(n * split.train)
    dev = round((n - train) * (split.dev / (split.dev + split.test)))
    return train, dev, n - train - dev


def min_items_per_label(split: SplitConfig) -> int:
    """Fewest items of a label for a stratified split to hold ``MIN_PER_LABEL`` in each part."""
    return next(n for n in range(1, 100_000) if min(_counts(n, split)) >= MIN_PER_LABEL)


def check_splittable(
    labels: dict[str, int], splits: dict[str, list[str]], split: SplitConfig, scale: Scale
) -> None:
    """A :class:`ConfigError` saying the minimum when some split lacks items of a label."""
    present = sorted(set(labels.values()))
    if len(present) < 2:
        raise ConfigError(f"optimize needs labelled items of at least two labels; found {present}")
    fractions = f"{split.train:g}/{split.dev:g}/{split.test:g}"
    for part in SPLITS:
        for y in present:
            k = sum(labels[i] == y for i in splits[part])
            if k >= MIN_PER_LABEL:
                continue
            name = scale.label_of(y) or y
            if split.stratify:
                raise ConfigError(
                    f"data set too small to split: label {name} has "
                    f"{sum(v == y for v in labels.values())} labelled items; a stratified "
                    f"{fractions} split needs at least {min_items_per_label(split)} per label "
                    f"({MIN_PER_LABEL} in each of train, dev and test)"
                )
            raise ConfigError(
                f"data set too small to split: the {part} split has {k} items labelled {name}; "
                f"each split needs at least {MIN_PER_LABEL} of every label (try stratify: true)"
            )


def label_counts(items: list[Item], scale: Scale) -> dict[str, int]:
    """Items per label (by label name where the scale has names)."""
    counts: dict[str, int] = {}
    for it in items:
        key = str(scale.label_of(it.expected) or it.expected)  # type: ignore[arg-type]
        counts[key] = counts.get(key, 0) + 1
    return counts


class Splits(NamedTuple):
    """The labelled items split train / dev / test: as ids, as items, and ``split.json``."""

    ids: dict[str, list[str]]
    items: dict[str, list[Item]]
    record: dict[str, Any]


def split_items(items: list[Item], split: SplitConfig, scale: Scale) -> Splits:
    """Split the labelled items (a :class:`ConfigError` when some split lacks a label) and
    record the split: its settings, the ids, sizes and labels of each part, and how many items
    have no reference label."""
    labelled = {it.id: it for it in items if it.expected is not None}
    labels = {i: it.expected for i, it in labelled.items()}
    ids = split_three(labels, split)  # type: ignore[arg-type]
    check_splittable(labels, ids, split, scale)  # type: ignore[arg-type]
    parts = {part: [labelled[i] for i in ids[part]] for part in SPLITS}
    record = {
        **split.model_dump(),
        **{f"{p}_ids": ids[p] for p in SPLITS},
        "sizes": {p: len(ids[p]) for p in SPLITS},
        "labels": {p: label_counts(parts[p], scale) for p in SPLITS},
        "without_reference": len(items) - len(labelled),
    }
    return Splits(ids, parts, record)
