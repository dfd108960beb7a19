"""When two labelled items are one item: the text the judge read (request, response,
transcript), normalised as a person reads it — what a certificate's consumed items, a tuned
judge's held-out check and conformal's overlap with its calibration items all compare, so that
renaming, relabelling, re-spacing, re-casing or respelling an item does not make it new.

The normalisation (rule :data:`VISIBLE`): characters nobody sees dropped — every format
character (Unicode category Cf: zero-width space and joiners, soft hyphen, byte-order mark,
direction marks, tag characters…) and every other default-ignorable code point (variation
selectors, the combining grapheme joiner, Hangul fillers, Mongolian free variation selectors,
Khmer inherent vowels, musical-symbol formatting controls, the code points Unicode reserves as
ignorable) —, then NFKC, case-folded, NFKC again, and whitespace runs collapsed to one space
and stripped. (No visible character normalises to an invisible one, so dropping them first is
dropping them everywhere.)

Records written before a rule keep theirs: an item is compared with one under the rule it was
recorded under (:func:`fingerprints_under`). Under the previous rule, :data:`NORMALISED`
(invisible characters kept), an item matches by its own text so normalised and by its text with
the invisible characters dropped — an item consumed then without them is found again whatever
invisible characters are added now; one consumed then with them is found again verbatim.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any, Literal

from assay.types import Item, stable_hash

VISIBLE = "visible-nfkc-casefold-whitespace"
"""How items are fingerprinted now: invisible characters dropped, then :data:`NORMALISED`'s."""
NORMALISED = "nfkc-casefold-whitespace"
"""How items were fingerprinted before invisible characters were dropped."""
Rule = Literal["visible-nfkc-casefold-whitespace", "nfkc-casefold-whitespace"]

# default-ignorable code points that are not format characters (Unicode's
# DerivedCoreProperties.txt, Default_Ignorable_Code_Point, less category Cf), inclusive ranges
_IGNORABLE = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors (and its vowel separator, Cf)
    (0x2060, 0x206F),  # word joiner … nominal digit shapes, with the unassigned among them
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # unassigned, reserved as ignorable
    (0x1D173, 0x1D17A),  # musical symbol formatting controls
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement, reserved as ignorable
)


def invisible(char: str) -> bool:
    """Whether ``char`` is one nobody sees: a format character or a default-ignorable one."""
    if unicodedata.category(char) == "Cf":
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _IGNORABLE)


def normalised(value: Any, *, keep_invisible: bool = False) -> Any:
    """``value`` with every string in it normalised as a person reads it (the module's rule):
    ``"Item 3 "``, ``"item 3"``, ``"item\\u200b 3"`` and an NFD spelling are one text.
    ``keep_invisible``: the previous rule (:data:`NORMALISED`), for records made under it."""
    if isinstance(value, str):
        if not keep_invisible and not value.isascii():
            value = "".join(c for c in value if not invisible(c))
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())
        return " ".join(folded.split())
    if isinstance(value, dict):
        return {
            normalised(k, keep_invisible=keep_invisible): normalised(
                v, keep_invisible=keep_invisible
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [normalised(v, keep_invisible=keep_invisible) for v in value]
    return value


def item_fingerprint(item: Item) -> str:
    """What makes a labelled item the same item, under the rule now (:data:`VISIBLE`): the
    text the judge read, normalised — not its id or its reference."""
    return stable_hash(normalised(_judged_text(item)), n=32)


def fingerprints_under(rule: object, items: Sequence[Item]) -> list[set[str]]:
    """Each item's fingerprints to compare with a record made under ``rule``: under
    :data:`VISIBLE`, its fingerprint now; under :data:`NORMALISED`, that of its text with
    invisible characters kept and that of its text without them; under none (certificates
    issued before items were normalised), that of its text as it is."""
    out = []
    for item in items:
        text = _judged_text(item)
        if rule == VISIBLE:
            out.append({stable_hash(normalised(text), n=32)})
        elif rule == NORMALISED:
            kept = normalised(text, keep_invisible=True)
            out.append({stable_hash(kept, n=32), stable_hash(normalised(text), n=32)})
        else:
            out.append({stable_hash(text, n=32)})
    return out


def _judged_text(item: Item) -> dict[str, Any]:
    return item.model_dump(mode="json", include={"request", "response", "transcript"})
