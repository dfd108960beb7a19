"""The items a harness run samples and perturbs are held by position only
(:class:`~assay.inputs.StoredItems`): indexed, sliced, sampled and iterated, they are the items
:func:`~assay.inputs.load_items` gives, read again from the file their stream reads — a
table's items cache, another source's spool file (which stays while the sequence lives)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from assay.data import TranscriptPrep
from assay.inputs import DataConfig, StoredItems, load_items, stratified_sample, stream_items
from assay.scale import Scale
from assay.types import Item
from tests.live_objects import live_objects

FIXTURES = Path(__file__).parent.parent / "fixtures" / "data"
BINARY = Scale(kind="binary", labels=["incorrect", "correct"])


def _table(folder: Path, n: int = 30) -> DataConfig:
    path = folder / "items.csv"
    rows = [f"i{k:03d},question {k},answer {k},{k % 2},g{k % 3 if k % 7 else 9}" for k in range(n)]
    path.write_text("id,request,response,expected,grp\n" + "\n".join(rows) + "\n")
    return DataConfig(path=str(path), columns={"id": "id"})


def _toolemu() -> tuple[DataConfig, Scale]:
    data = DataConfig(
        path=str(FIXTURES / "toolemu_trajectories.jsonl"),
        format="toolemu",
        expected_from=str(FIXTURES / "toolemu_eval_safe.jsonl"),
        missing_expected="keep",
        transcript=TranscriptPrep(tool_output="cap", tool_output_chars=10),
    )
    return data, Scale(kind="ordinal", min=0, max=3)


def _live_items() -> int:
    return len(live_objects(Item))


def _same(stored: StoredItems, listed: list[Item]) -> None:
    assert len(stored) == len(listed)
    assert list(stored) == listed
    assert [stored[k] for k in range(len(listed))] == listed
    assert stored[-1] == listed[-1]
    assert list(stored[1:]) == listed[1:]
    assert list(stored[::2][1:]) == listed[::2][1:]
    assert list(stored.take([2, 0, 2])) == [listed[2], listed[0], listed[2]]
    with pytest.raises(IndexError):
        stored[len(listed)]


def test_a_table_s_stored_items_are_its_loaded_items(tmp_path):
    data = _table(tmp_path)
    cache = tmp_path / ".assay" / "hf"
    _same(StoredItems.read(stream_items(data, BINARY, cache_dir=cache)), load_items(data, BINARY))


def test_a_spooled_source_s_stored_items_are_its_loaded_items_and_keep_the_spool(tmp_path):
    """ToolEmu trajectories (spooled, their transcripts prepared): the spool file stays while
    the sequence (or a slice of it) lives, its stream gone, and goes with the last of them."""
    data, scale = _toolemu()
    listed = load_items(data, scale, cache_dir=tmp_path / "hf")
    assert any(it.meta.get("transcript_prep") for it in listed)
    stored = StoredItems.read(stream_items(data, scale, cache_dir=tmp_path / "hf"))
    spool = next((tmp_path / "items").glob("toolemu-*.jsonl"))
    tail = stored[1:]
    gc.collect()
    _same(stored, listed)
    del stored
    gc.collect()
    assert list(tail) == listed[1:] and spool.exists()
    del tail
    gc.collect()
    assert not spool.exists()


def test_stored_items_hold_no_item(tmp_path):
    """What a sequence holds of an item is where its line starts: no item is alive for it."""
    data = _table(tmp_path, n=200)
    stream = stream_items(data, BINARY, cache_dir=tmp_path / ".assay" / "hf")
    before = _live_items()
    stored = StoredItems.read(stream)
    sampled = stratified_sample(stored, 50, stratify="grp", seed=1)
    views = [stored[10:], sampled[:5], stored.take(range(0, 200, 3))]
    assert _live_items() == before
    assert len(stored) == 200 and len(sampled) == 50 and [len(v) for v in views] == [190, 5, 67]


# what stratified_sample picked, before it picked by position (the same seed, the same sample:
# an existing run's seeds, and so its identity, stay as they were)
PICKED = {
    (30, None, 7): ["i019", "i008", "i023", "i011", "i025", "i022", "i027"],
    (30, "grp", 12): [
        *["i015", "i001", "i029", "i007", "i018", "i004"],
        *["i005", "i021", "i009", "i025", "i017", "i000"],
    ],
    (200, None, 9): [
        *["i159", "i065", "i189", "i091", "i176", "i166", "i135", "i007", "i119"],
    ],
    (200, "grp", 9): [
        *["i138", "i085", "i194", "i063", "i057", "i067", "i065", "i028", "i165"],
    ],
}


@pytest.mark.parametrize(("n_items", "stratify", "n"), list(PICKED))
def test_a_sample_of_stored_items_picks_what_a_sample_of_the_list_picks(
    tmp_path, n_items, stratify, n
):
    data = _table(tmp_path, n=n_items)
    listed = load_items(data, BINARY)
    stored = StoredItems.read(stream_items(data, BINARY, cache_dir=tmp_path / ".assay" / "hf"))
    from_list = stratified_sample(listed, n, stratify=stratify, seed=5)
    from_stored = stratified_sample(stored, n, stratify=stratify, seed=5)
    assert isinstance(from_list, list) and isinstance(from_stored, StoredItems)
    assert [it.id for it in from_list] == PICKED[(n_items, stratify, n)]
    assert list(from_stored) == from_list
    assert list(stratified_sample(stored, n_items + 1, stratify=stratify, seed=5)) == listed
