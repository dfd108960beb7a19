"""What makes two labelled items one item (certify's consumed items, a tuned judge's held-out
check, conformal's overlap): the text the judge read with a terminal's escape sequences and
invisible characters dropped, NFKC, case-folded, whitespace collapsed, look-alike letters folded
(Unicode's confusables, UTS #39) —
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


@pytest.mark.parametrize("filler", ["\u3164", "\uffa0", "\u115f", "\u1160"])
def test_a_hangul_filler_reads_as_the_blank_fonts_draw(filler):
    """Default-ignorable, but drawn as a blank as wide as a letter: one standing for a space
    is that space (it was dropped, and ``is<filler>blue`` read ``isblue``, a new item)."""
    plain = item("It is blue.")
    assert item_keys(item(f"It is{filler}blue.{filler}", id="b")) == item_keys(plain)
    assert not same(item(f"It is bl{filler}ue."), plain)  # a gap a reader sees
    assert not same(item("It isblue."), item(f"It is{filler}blue."))


def test_whitespace_controls_still_separate_words():
    assert same(item("It is\tblue.\r\n"), item("It is blue."))
    assert not same(item("It is\tblue."), item("It isblue."))


@pytest.mark.parametrize(
    "dress",
    [
        lambda t: f"\x1b[1m{t}\x1b[0m",
        lambda t: f"\x1b[38;5;196m{t}\x1b[39m",
        lambda t: t.replace("blue", "\x1b[1;34mblue\x1b[22;39m"),
        lambda t: f"\x1b]8;;http://x\x1b\\{t}\x1b]8;;\x1b\\",
        lambda t: f"\x1b]0;a title\x07{t}",
        lambda t: f"\x1b(B\x1b)0\x1b7{t}\x1b8\x1bc",
        lambda t: f"\x9b1m{t}\x9b0m",
        lambda t: f"\x1bPq#0;2;0;0;0\x1b\\{t}\x1b_an APC string\x1b\\",
        lambda t: t.replace(" is ", " is\x1b[\n0m"),
        lambda t: f"\x1b[12\x1b[1m{t}\x1b[0",
    ],
    ids=[
        "bold",
        "256 colours",
        "a word in colour",
        "hyperlink (OSC 8, ST)",
        "window title (OSC, BEL)",
        "charset, cursor saved, reset",
        "8-bit CSI",
        "DCS and APC strings",
        "a line break inside a sequence",
        "broken off",
    ],
)
def test_terminal_escape_sequences_do_not_make_an_item_new(dress):
    """A terminal shows the text without its escape sequences (ECMA-48): an item in colour,
    behind a hyperlink or under a window title is the item — the whole sequence goes, not its
    ESC alone (which left ``[1m`` as text)."""
    plain = item("It is blue.")
    assert item_keys(item(dress("It is blue."), id="b")) == item_keys(plain)
    assert not same(item(dress("It is green.")), plain)


def test_what_a_terminal_shows_beside_an_escape_sequence_is_kept():
    """Only what a sequence takes is dropped: a sequence written out without its ESC is text, a
    character beyond ASCII ends a sequence and is shown, and what follows a final byte is
    shown."""
    coloured = item("\x1b[31mIt is red.\x1b[0m")
    assert not same(coloured, item("[31mIt is red.[0m", id="b"))  # typed out: no colour
    assert same(coloured, item("It is red.", id="b"))
    assert same(item("It is \x1b[1\u00e9bleu."), item("It is \u00e9bleu.", id="b"))
    assert not same(item("It is \x1b[1\u00e9bleu."), item("It is bleu.", id="b"))
    assert same(item("\x1b(BIt is blue."), item("It is blue.", id="b"))  # ESC ( B, then text
    assert same(item("It is blue.\x1b"), item("It is blue.", id="b"))  # a lone ESC
    # the 8-bit openers of control strings are C1 controls alone (text misread as Latin-1 is
    # full of them): what follows is kept
    assert same(item("It is \x9dblue."), item("It is blue.", id="b"))


def test_escape_sequences_are_read_as_a_terminal_reads_them():
    """The fold drops what a terminal's parser (ECMA-48 as DEC terminals read it, one character
    at a time: :func:`terminal_reading`) never shows, on seeded random texts of sequences'
    pieces, broken ones too: the texts the fold reads with a terminal's state machine."""
    import random

    from assay.inputs._item_text import _seen, _seen_escapes_kept

    rng = random.Random(5)
    pool = [*"ab [];m0P^_X\\(B7c~\x07\x18\x1a\t\n\r\x1c\x7f\x01\u00e9\x85\x9c\x9d\x90"]
    pool += ["\x1b", "\x1b", "\x9b", "\x1b[", "\x1b]", "1;31m", "\x1b\\"]
    for _ in range(20_000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 30)))
        assert _seen(text) == _seen_escapes_kept(terminal_reading(text)), repr(text)


def terminal_reading(text: str) -> str:
    """What a terminal shows of ``text``, its controls left in place (the fold drops them): a
    state machine after the DEC parser — ESC begins an escape sequence, ``[`` after it (or
    U+009B) a control sequence, ``]`` an OSC string, ``P``, ``X``, ``^``, ``_`` the other
    control strings. A whitespace control inside a sequence is acted on (shown), any other
    dropped; CAN, SUB, a C1 control or a character beyond ASCII ends a sequence and is shown
    (U+009B beginning a new one); ESC ends one and begins another; a string swallows all else,
    an OSC ending at BEL too."""
    out, state = [], "ground"
    for c in text:
        code = ord(c)
        if state in ("osc", "string"):
            if c == "\x1b" or (c == "\x07" and state == "osc"):
                state = "escape" if c == "\x1b" else "ground"
                continue
            if not (c in "\x18\x1a" or 0x80 <= code <= 0x9F):
                continue
            state = "ground"
        elif state != "ground":
            if c == "\x1b":
                state = "escape"
                continue
            if code < 0x20 and c not in "\x18\x1a" or code == 0x7F:
                out.extend(c for _ in range(c.isspace()))
                continue
            if code < 0x80 and c not in "\x18\x1a":
                if state == "escape":
                    opener = {"[": "csi", "]": "osc"}.get(c, "string" if c in "PX^_" else "")
                    state = opener or ("intermediate" if code <= 0x2F else "ground")
                elif state == "intermediate":
                    state = "intermediate" if code <= 0x2F else "ground"
                else:  # a control sequence: parameter and intermediate bytes, then its final
                    state = "csi" if code <= 0x3F else "ground"
                continue
            state = "ground"
        if c == "\x1b" or c == "\x9b":
            state = "escape" if c == "\x1b" else "csi"
        else:
            out.append(c)
    return "".join(out)


def test_items_recorded_before_escape_sequences_were_dropped_are_found_again():
    """A record made under :data:`ESCAPES_KEPT` (an escape sequence's ESC dropped, the rest of
    it read as text): its item in colour is found again verbatim, an item recorded without
    colour is found in colour — under that rule and every one before it — and an item it never
    saw is not; every fingerprint that rule gave an item is among those it has now."""
    from assay.inputs._item_text import (
        ESCAPES_KEPT,
        _hashes,
        _seen_escapes_kept,
        _variants,
    )

    def recorded_then(it: Item) -> set[str]:
        return set(_hashes(_variants(judged(it), _seen_escapes_kept)[1:4]))

    coloured, plain = item("\x1b[1mIt is blue.\x1b[0m"), item("It is blue.")
    for recorded, now in ((coloured, coloured), (plain, coloured), (plain, plain)):
        (keys,) = fingerprints_under(ESCAPES_KEPT, [now])
        assert keys & recorded_then(recorded)
    (keys,) = fingerprints_under(ESCAPES_KEPT, [item("\x1b[1mIt is green.\x1b[0m")])
    assert not keys & (recorded_then(coloured) | recorded_then(plain))
    for rule in (ESCAPES_KEPT, CONTROLS_KEPT, SKELETON_CASED, VISIBLE, NORMALISED):
        (keys,) = fingerprints_under(rule, [coloured])
        assert recorded_then(coloured) <= keys, rule  # what the rule before gave
        assert set(item_keys(plain)) & keys, rule


def test_texts_without_an_escape_keep_their_keys_to_the_bit():
    """Dropping escape sequences changes the keys of texts with an ESC or a U+009B only: the
    examples' HarmBench and Persuade items and random texts of every kind the fold reads (C1
    controls, invisible and private-use characters, look-alikes, other scripts) have the keys
    :data:`ESCAPES_KEPT` gave them (a digest of them all, taken under it) — and in colour they
    have them too."""
    import hashlib
    import json

    items = varied_items()
    assert len(items) == 393
    assert not any("\x1b" in t or "\x9b" in t for it in items for t in (it.request, it.response))
    keys = [item_keys(it) for it in items]
    digest = hashlib.sha256(json.dumps(keys).encode()).hexdigest()
    assert digest == "f873cba87f3deddc5b5515d8259d20b8ca7dc85430cd1358f2043a93f76f05ec"
    for it, its_keys in zip(items, keys, strict=True):
        dressed = it.model_copy(update={"response": f"\x1b[1;31m{it.response}\x1b[0m"})
        assert item_keys(dressed) == its_keys, it.id


def varied_items() -> list[Item]:
    """The examples' HarmBench held-out items and Persuade essays, and 200 seeded random texts
    of characters every step of the fold reads."""
    import csv
    import random

    root = Path(__file__).resolve().parents[2] / "examples" / "data" / "jrh"
    items = []
    with (root / "harmbench" / "harmbench_heldout.csv").open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            items.append(Item(id=row["idx"], request=row["test_case"], response=row["generation"]))
    with (root / "persuade" / "persuade_sample.csv").open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            items.append(
                Item(id=row["essay_id"], request=row["prompt_name"], response=row["full_text"])
            )
    rng = random.Random(2024)
    pool = [*"abcdeIlO0 m\t\n.,;[]()", "\x07", "\x7f", "\x01", "\x85", "\x90", "\x9d", "\x9c"]
    pool += ["\u200b", "\u00ad", "\ue000", "\u2800", "\u0435", "\u0399", "\u00e9", "\u00df"]
    pool += ["\ufb01", "\u0416", "\u4e2d", "\U0001d408", "\u0301", "\u2060"]
    for k in range(200):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 60)))
        items.append(Item(id=f"r{k}", request=f"Question {k}", response=text))
    return items


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
    from assay.inputs._item_text import _hashes, _seen_before, _variants

    def recorded_then(it: Item) -> set[str]:
        return set(_hashes(_variants(judged(it), _seen_before)[1:4]))

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


def test_a_transcript_is_the_text_its_rendering_shows_the_judge():
    """Step numbers, tool-call ids and any other field a log carries are not read by the judge
    (the rendered transcript): the same conversation renumbered, or with its ids or extra fields
    changed, is the same item — it was a new one, so a consumed transcript could be certified
    again. What the rendering shows (a message's content, a tool call's arguments) still counts.
    A record made under the rule before, which kept every field, still finds it."""
    from assay.data import render_transcript
    from assay.inputs._item_text import ESCAPES_KEPT, fingerprints_under, same_items
    from assay.types import Message, ToolCall

    def convo(step0: int, call_id: str, **extra: object) -> Item:
        call = ToolCall(function="send_email", arguments={"to": "a@b.c"})
        messages = [
            Message(role="user", content="Email Bob.", step=step0, **extra),
            Message(role="assistant", tool_calls=[call], step=step0 + 1),
            Message(role="tool", content="sent", function="send_email", tool_call_id=call_id),
        ]
        return Item(id=f"t{step0}", transcript=messages)

    first, renumbered = convo(0, "c1"), convo(7, "call-99", source="log 2")
    assert render_transcript(first.transcript) == render_transcript(renumbered.transcript)
    assert same_items([first, renumbered]) == ["item t0", "item t0"]
    other = convo(0, "c1")
    other.transcript[1].tool_calls[0].arguments["to"] = "x@y.z"
    assert same_items([first, other]) == [None, None]
    then = fingerprints_under(ESCAPES_KEPT, [first, renumbered])
    assert set(item_keys(first)) <= then[0] and len(then[0]) > len(item_keys(first))
