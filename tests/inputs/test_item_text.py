"""What makes two labelled items one item (certify's consumed items, a tuned judge's held-out
check, conformal's overlap): the text the judge read with invisible characters dropped, NFKC,
case-folded, whitespace collapsed, look-alike letters folded (Unicode's confusables, UTS #39) —
and the property the module rests on, that no visible character normalises to an invisible one
(so dropping them first drops them everywhere)."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest

from assay.inputs._item_text import (
    CONFUSABLES,
    CONTROLS_KEPT,
    NORMALISED,
    SKELETON_CASED,
    VISIBLE,
    fingerprints_under,
    invisible,
    item_keys,
    normalised,
    unseen,
)
from assay.types import Item, stable_hash


def item(response: str, id: str = "a") -> Item:
    return Item(id=id, request="What colour is it?", response=response, expected=1)


@pytest.mark.parametrize(
    "hidden",
    [
        "\u200b",  # zero-width space
        "\u00ad",  # soft hyphen
        "\ufeff",  # byte-order mark
        "\u200c\u200d\u2060",  # non-joiner, joiner, word joiner
        "\u202e\u2066",  # direction overrides and isolates
        "\u034f",  # combining grapheme joiner
        "\ufe0f\U000e0101",  # variation selectors
        "\u3164\u115f",  # Hangul fillers
        "\U000e0041",  # a tag character
        "\x07\x7f\x01",  # control characters (BEL, DEL, SOH)
        "\x9f",  # a C1 control
        "\ue000\U000f0000",  # private-use characters
    ],
)
def test_invisible_characters_do_not_make_an_item_new(hidden):
    plain = item("It is blue.")
    assert item_keys(item(f"{hidden}It is bl{hidden}ue.", id="b")) == item_keys(plain)
    assert not same(item("It is green."), plain)


def test_a_blank_that_is_no_whitespace_reads_as_a_space():
    plain = item("It is blue.")
    assert item_keys(item("It is\u2800blue.\u2800", id="b")) == item_keys(plain)
    assert not same(item("It is bl\u2800ue."), plain)  # a gap a reader sees


def test_whitespace_controls_still_separate_words():
    assert same(item("It is\tblue.\r\n"), item("It is blue."))
    assert not same(item("It is\tblue."), item("It isblue."))


def same(a: Item, b: Item) -> bool:
    """Whether ``a`` and ``b`` are one item: they share a key."""
    return bool(set(item_keys(a)) & set(item_keys(b)))


def test_no_visible_character_normalises_to_an_invisible_one():
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unseen(char) or unicodedata.category(char) == "Cs":
            continue
        text = normalised(char, keep_invisible=True)
        assert not any(unseen(c) for c in text), hex(code)
        assert invisible(char) or not any(invisible(c) for c in text), hex(code)


def test_items_recorded_before_control_characters_were_dropped_are_found_again():
    """A record made under :data:`CONTROLS_KEPT` (control and private-use characters kept):
    its item is found again verbatim, an item recorded without them is found with them added,
    and an item it never saw is not."""
    from assay.inputs._item_text import _hashes, _variants

    def recorded_then(it: Item) -> set[str]:
        return set(_hashes(_variants(judged(it), before=True)[1:4]))

    with_bell, plain = item("It is blue.\x07"), item("It is blue.")
    for recorded, now in ((with_bell, with_bell), (plain, with_bell), (plain, plain)):
        (keys,) = fingerprints_under(CONTROLS_KEPT, [now])
        assert keys & recorded_then(recorded)
    (keys,) = fingerprints_under(CONTROLS_KEPT, [item("It is green.\x07")])
    assert not keys & recorded_then(plain)


def judged(it: Item) -> dict:
    return it.model_dump(mode="json", include={"request", "response", "transcript"})


def test_an_item_recorded_under_the_previous_rule_matches_with_and_without_them():
    """Under the rule before invisible characters were dropped, an item matches by its text
    with them kept (a consumed item verbatim) and with them dropped (a consumed item with one
    slipped in)."""
    plain, hidden = item("It is blue."), item("It is bl\u200bue.")

    def kept(it: Item) -> str:
        return stable_hash(normalised(judged(it), keep_invisible=True), n=32)

    (before_hidden,) = fingerprints_under(NORMALISED, [hidden])
    assert kept(hidden) in before_hidden and kept(plain) in before_hidden


@pytest.mark.parametrize(
    "respell",
    [
        lambda t: t.replace("I", "\u0399"),  # Greek capital iota (the adversary's swap)
        lambda t: t.replace("e", "\u0435"),  # Cyrillic small ie
        lambda t: t.replace("I", "\u0399").replace("e", "\u0435").replace("o", "\u03bf"),
        lambda t: t.replace("l", "\u0399"),  # a Greek capital iota for a small L
        lambda t: t.replace("I", "l"),  # ASCII look-alikes: small L for capital I
        lambda t: t.replace("m", "rn"),
        lambda t: t.replace("T", "\u03a4").replace("H", "\u041d"),  # Greek Tau, Cyrillic En
        lambda t: t.upper().replace("E", "\u0415"),  # capitals, one of them Cyrillic
        lambda t: t.lower().replace("i", "\u0456"),  # small letters, one of them Cyrillic
        lambda t: t.replace("a", "\u0430").replace(" ", "\u200b \u00a0"),  # with others
        lambda t: t.replace("Item", "\U0001d408\U0001d42d\U0001d41e\U0001d426"),  # math bold
        # re-cased and a capital look-alike for a small letter: hEΙΙo for Hello
        lambda t: t.replace("team", "TEAM").replace("l", "\u0399"),
        lambda t: t.replace("e", "E").replace("l", "\u0399"),
    ],
    ids=[
        "Greek I",
        "Cyrillic e",
        "three scripts",
        "Greek I for l",
        "l for I",
        "rn for m",
        "capitals T H",
        "upper-cased",
        "lower-cased",
        "with invisible",
        "math bold",
        "re-cased, Greek I for l",
        "E for e, Greek I for l",
    ],
)
def test_look_alike_letters_do_not_make_an_item_new(respell):
    """Unicode's confusables (UTS #39): the same text written with look-alikes of other scripts,
    or of ASCII, is the same item — before, after or with the case folded."""
    text = "Item 7: The HOME team will fill the modern hall."
    assert respell(text) != text
    assert same(item(respell(text), id="b"), item(text))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("It is hot.", "It is not."),  # Greek eta looks like n, its capital like H: not h ~ n
        ("They fail.", "They fall."),  # capital I looks like l: not small i ~ l
        ("item", "ltem"),
        ("It is blue.", "It is green."),
        ("\u043d\u0435\u0442", "het"),  # Cyrillic small en looks like no Latin letter
    ],
)
def test_letters_a_reader_tells_apart_keep_items_apart(a, b):
    assert not same(item(a), item(b, id="b"))


def test_case_is_folded_in_every_script():
    assert same(item("\u041d\u0415\u0422"), item("\u043d\u0435\u0442", id="b"))
    assert same(item("\u0397\u039f\u03a4"), item("\u03b7\u03bf\u03c4", id="b"))


def test_an_ascii_text_has_the_fingerprint_it_had_before_look_alikes_were_folded():
    """Items consumed under :data:`VISIBLE` stay consumed, and items consumed now are found
    by that rule's fingerprint: an ASCII text's keys hold it."""
    plain = item("It is Blue.  ")
    visible = stable_hash(normalised(judged(plain)), n=32)
    assert visible in item_keys(plain)
    assert fingerprints_under(CONFUSABLES, [plain]) == [set(item_keys(plain))]
    # under the rule before, look-alikes swapped in are found by the text they imitate
    (swapped,) = fingerprints_under(VISIBLE, [item("\u0399t is Blu\u0435.")])
    assert visible in swapped


def test_items_recorded_when_the_skeleton_kept_its_case_are_found_again():
    """A record made under :data:`SKELETON_CASED` holds the folded, as-written and cased
    skeleton keys: the item is found again verbatim and in the spellings that rule made one
    with it (a record cannot say more than its keys: the rule now's new spellings are caught
    for items recorded under it)."""
    from assay.inputs._item_text import _hashes, _variants

    def recorded_then(it: Item) -> set[str]:
        _, folded, written, _, cased_skeleton = _variants(judged(it))
        return set(_hashes((folded, written, cased_skeleton)))

    text = "Item 7: The HOME team will fill the modern hall."
    record = recorded_then(item(text))
    for now in (text, text.replace("I", "\u0399"), text.replace("m", "rn"), text.upper()):
        (keys,) = fingerprints_under(SKELETON_CASED, [item(now, id="b")])
        assert keys & record, now
    (keys,) = fingerprints_under(SKELETON_CASED, [item("It is green.", id="b")])
    assert not keys & record


def test_the_skeleton_is_unicodes():
    """UTS #39's own example, and a skeleton is its own skeleton (every entry of the table is
    written as it is, in NFD)."""
    from assay.inputs._item_text import _SKELETON, _skeleton, _skeleton_table

    assert _skeleton("\U0001d52d\U0001d4b6\u1eff\U0001d561\U0001d552\u2113") == _skeleton("paypal")
    for value in _skeleton_table().values():
        assert unicodedata.normalize("NFD", value) == value
        assert value.translate(_SKELETON) == value


def test_the_confusable_classes_are_those_records_were_made_with():
    """The keys of every record made since look-alikes were folded rest on these classes: a
    package that ships others changes what an item's keys are, and needs a rule of its own."""
    import hashlib
    from importlib import metadata
    from importlib.util import find_spec

    from assay.inputs._item_text import DATA

    package, name = DATA
    assert metadata.version("confusable-homoglyphs") == "3.3.1"  # pyproject.toml pins it
    path = Path(next(iter(find_spec(package).submodule_search_locations))) / name
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == "2d8b4774cd9dc6f233a18681bc00423ae270037437f276fc6a8b80630941fe7d"


def test_a_pair_is_one_item_with_its_response_b_only():
    """A pair's response B is read by the judge: pairs built from one prompt's responses share
    the request and often response A, and were one item (same_items grouped them, certify
    refused them as repeats); the same pair under another id is still one."""
    from assay.inputs import same_items

    def pair(id: str, b: str) -> Item:
        return Item(id=id, request="Which is better?", response="one", meta={"response_b": b})

    a, b, a2 = pair("a", "two"), pair("b", "three"), pair("a2", " Two ")
    assert same_items([a, b]) == [None, None]
    assert set(item_keys(a)).isdisjoint(item_keys(b))
    assert same_items([a, b, a2]) == ["item a", None, "item a"]
    # a record made before response B was read kept a pair as its request and response A
    # alone: it still finds the pair it consumed
    kept_before = set(item_keys(Item(id="x", request="Which is better?", response="one")))
    assert all(kept_before & f for f in fingerprints_under(CONFUSABLES, [a, b]))
