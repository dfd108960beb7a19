"""A run's items by position, read from the file their stream reads: what is held of each is
where its line starts (8 bytes), so a run can index, slice, sample and iterate a million seeds
holding none of them."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from assay.errors import DataError
from assay.inputs._items import ItemLines, ItemStream
from assay.types import Item


class StoredItems(Sequence[Item]):
    """The items of an :class:`ItemStream` (:func:`~assay.inputs.stream_items`'s) as a
    sequence: ``len``, ``items[i]`` (the item read from its line, as
    :func:`~assay.inputs.load_items` gives it), ``items[a:b]`` and :meth:`take` (the same
    file, other positions), iteration one item at a time. It holds the stream, so the spool
    file that goes with the stream stays while any of its sequences lives."""

    def __init__(self, stream: ItemStream, offsets: array):
        if stream.lines is None:
            raise ValueError("the stream reads no file of items (stream_items' streams do)")
        self._stream = stream
        self._lines: ItemLines = stream.lines
        self._offsets = offsets

    @classmethod
    def read(cls, stream: ItemStream) -> StoredItems:
        """Every item of ``stream``, from one reading of its file (where each line starts)."""
        lines = stream.lines
        placed = lines.placed() if lines is not None else ()
        return cls(stream, array("q", (offset for offset, _ in placed)))

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> StoredItems: ...

    def __getitem__(self, index: int | slice) -> Item | StoredItems:
        if isinstance(index, slice):
            return StoredItems(self._stream, self._offsets[index])
        return next(self._at((self._offsets[index],)))

    def __iter__(self) -> Iterator[Item]:
        return self._at(self._offsets)

    def take(self, positions: Iterable[int]) -> StoredItems:
        """The items at ``positions``, in that order (a sample's)."""
        return StoredItems(self._stream, array("q", (self._offsets[k] for k in positions)))

    def _at(self, offsets: Iterable[int]) -> Iterator[Item]:
        """The items whose lines start at ``offsets``, one at a time."""
        path = self._lines.path
        try:
            with open(path, "rb") as fh:
                for offset in offsets:
                    fh.seek(offset)
                    yield self._lines.item(fh.readline())
        except OSError as exc:
            raise DataError(f"cannot read: {exc}", path=path) from None

    def __repr__(self) -> str:
        return f"StoredItems({len(self)} items of {self._lines.path})"
