"""The fingerprint of the set of items a judge was measured on (MLflow's ``assay.items`` tag):
the same for the same items in any order, listed or streamed; a stream's is taken by one
reading of it into sorted runs of a slice each, merged in id order — neither its items nor its
ids held all at once."""

from __future__ import annotations

import random

import pytest

import assay.inputs._items as items_module
from assay.inputs import ItemStream, data_fingerprint, item_set_tags
from assay.types import Item

IDS = ["b", "a", "ä", "A", "10", "9", "z\u2028", "tab\there", "日本", "a a", "", "Z", "ß", "ss"]


def _items() -> list[Item]:
    return [
        Item(id=i, request=f"q {k}", response=f"r\n{k} ✓", expected=k % 2)
        for k, i in enumerate(IDS)
    ]


@pytest.mark.parametrize("slice_size", [1, 3, 5, len(IDS), 1000])
def test_a_stream_s_set_fingerprint_is_the_sorted_items_whatever_the_slice(slice_size, monkeypatch):
    items = _items()
    random.Random(slice_size).shuffle(items)
    reads = []

    def read():
        reads.append(1)
        return iter(items)

    monkeypatch.setattr(items_module, "_SORT_SLICE", slice_size)
    tags = item_set_tags(ItemStream(read), split="all")
    expected = data_fingerprint(sorted(items, key=lambda it: it.id))
    assert tags["assay.items"] == expected[:16]
    assert tags["assay.n_items"] == str(len(IDS))
    assert item_set_tags(list(reversed(items)), split="all") == tags  # listed, any order
    assert len(reads) == 1  # the stream is read once
