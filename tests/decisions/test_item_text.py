"""What makes two labelled items one item (certify's consumed items, a tuned judge's held-out
check, conformal's overlap): the text the judge read with invisible characters dropped, NFKC,
case-folded, whitespace collapsed — and the property the module rests on, that no visible
character normalises to an invisible one (so dropping them first drops them everywhere)."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from assay.decisions._item_text import (
    NORMALISED,
    VISIBLE,
    fingerprints_under,
    invisible,
    item_fingerprint,
    normalised,
)
from assay.types import Item


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
    ],
)
def test_invisible_characters_do_not_make_an_item_new(hidden):
    plain = item("It is blue.")
    assert item_fingerprint(item(f"{hidden}It is bl{hidden}ue.", id="b")) == item_fingerprint(plain)
    assert item_fingerprint(item("It is green.")) != item_fingerprint(plain)


def test_no_visible_character_normalises_to_an_invisible_one():
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if invisible(char) or unicodedata.category(char) == "Cs":
            continue
        text = normalised(char, keep_invisible=True)
        assert not any(invisible(c) for c in text), hex(code)


def test_an_item_recorded_under_the_previous_rule_matches_with_and_without_them():
    """Under the rule before invisible characters were dropped, an item matches by its text
    with them kept (a consumed item verbatim) and with them dropped (a consumed item with one
    slipped in)."""
    plain, hidden = item("It is blue."), item("It is bl\u200bue.")
    (before_plain,) = fingerprints_under(NORMALISED, [plain])
    (before_hidden,) = fingerprints_under(NORMALISED, [hidden])
    assert before_plain <= before_hidden and len(before_hidden) == 2
    assert fingerprints_under(VISIBLE, [hidden]) == [{item_fingerprint(plain)}]
