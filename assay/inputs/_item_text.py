"""When two labelled items are one item: the text the judge read (request, response,
transcript, a pair's response B), normalised as a person reads it — what a certificate's
consumed items, a tuned judge's held-out check, conformal's overlap with its calibration items
and the harness's and estimate's clusters all compare, so that renaming, relabelling,
re-spacing, re-casing, respelling an item, writing it with look-alike letters of another
script or in a terminal's colours does not make it new.

Under the rule now (:data:`CONFUSABLES`) an item has up to three keys, and two items are one
when they share a key:

- *folded*: the text as :data:`VISIBLE` normalises it — since :data:`CONFUSABLES`, a
  terminal's escape sequences dropped first, each whole (below: :data:`ESCAPES`); characters
  nobody sees dropped (every format character, Unicode category Cf: zero-width space and
  joiners, soft hyphen, byte-order mark, direction marks, tag characters…, and every other
  default-ignorable code point:
  variation selectors, the combining grapheme joiner, Hangul fillers, Mongolian free variation
  selectors, Khmer inherent vowels, musical-symbol formatting controls, the code points Unicode
  reserves as ignorable; and, since :data:`ESCAPES_KEPT`, control characters that are no
  whitespace and private-use ones, a braille blank read as a space: :func:`unseen`), then
  NFKC, case-folded, NFKC again, whitespace runs collapsed to one space and stripped — with
  every character Unicode lists as confusable (UTS #39's confusables) written as the ASCII character it imitates (Cyrillic ``е`` as ``e``, Greek
  ``ι`` as ``i``), or as its class is written in a skeleton when it imitates none, and
  normalised again. Two texts one case-fold apart share it.
- *as written*: the same fold on the text before it is case-folded, each look-alike written as
  the ASCII character of its own kind (Greek ``Τ`` as ``T``, a digit's look-alike as the
  digit), then normalised: a capital letter of another script in place of a Latin one
  (``Τhe``, ``ΗOME``), whose small letter imitates another (``τ``, ``η``).
- *skeleton*: UTS #39's skeleton of the text with invisible characters dropped and whitespace
  collapsed — NFD, every character mapped to the one its confusable class is written as, NFD
  again —, then case-folded and the skeleton taken again (a capital's small letter may have
  a skeleton of its own: ``M``, ``m``, ``rn``) and case-folded: two texts Unicode calls
  confusable share it, ASCII look-alikes among themselves too (``l``, ``I``, ``1`` and ``|``;
  ``rn`` and ``m``; ``0`` and ``O``), and so do two such texts re-cased — ``hEΙΙo`` (a Greek
  capital iota standing for each small ``l``) and ``Hello``, which neither the folded key
  (``heiio``) nor the skeleton with its case kept (``hEllo``, the rule before) made one. A
  letter whose case change takes it to another class of look-alikes (a capital ``I`` imitates
  ``l``, its small ``i`` does not; ``O`` imitates ``0``, ``o`` does not) is not folded across:
  ``fail`` and ``fall`` stay two — and so, the limit of folding case and look-alikes one after
  the other, does ``HOME`` re-cased to ``home`` in a text with a look-alike elsewhere.

*Escape sequences.* A terminal shows ``"\\x1b[1mHow do I pick a lock?\\x1b[0m"`` as ``How do
I pick a lock?`` in bold: the ESC is a control character, dropped with the others, but the rest
of its sequence (``[1m``) is no text either, and kept it made the item new. Each sequence is
dropped whole, before anything else, where ECMA-48 (and ECMA-35 for escape sequences) says one
is, as terminals read it (their DEC parser):

- a control sequence (CSI: colours, cursor moves, erasing): ESC ``[`` or its 8-bit form U+009B,
  parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, a final byte 0x40–0x7E;
- a control string, with what it holds: OSC (ESC ``]``: a window title, a hyperlink's target)
  up to BEL or ST (ESC ``\\``, or U+009C); DCS, SOS, PM and APC (ESC ``P``, ``X``, ``^``,
  ``_``) up to ST — ``\\x1b]8;;http://x\\x1b\\\\text\\x1b]8;;\\x1b\\\\`` (a link) reads ``text``;
- any other escape sequence: ESC, intermediate bytes 0x20–0x2F, a final byte 0x30–0x7E — ESC
  and one byte (0x40–0x5F: a C1 control written in 7 bits; 0x60–0x7E: ``ESC c`` resets the
  terminal; 0x30–0x3F: ``ESC 7`` saves the cursor), or with intermediates (``ESC ( B`` selects
  a character set). A terminal shows none of these bytes: ``\\x1bHi`` reads ``i``.

A terminal reads a text as it comes, and never shows what it took into a sequence, even one
that breaks off: at the end of the text, at another ESC or a C1 control (where the next one
begins), at CAN or SUB (which cancel it) — so that part goes too, and a control string never
ended runs to the end of the text. A control character inside a sequence (not a string) is
acted on where it stands, the sequence going on after it: a line break or a tab inside one
still separates words. Only what these forms take is dropped: a character beyond ASCII is no
part of a sequence — it ends one and is shown (``\\x1bé`` reads ``é``), as is everything after
a sequence's final byte; a lone ESC is just dropped. The 8-bit openers of control strings
(U+0090, U+0098, U+009D, U+009E, U+009F) are dropped as the C1 controls they are, what follows
them kept: U+0080–U+009F are also what text in UTF-8 misread as Latin-1 is full of (``Н`` read
as ``Ð`` and U+009D), where strings read to the end would fold whole texts away.

*Hangul fillers.* Since :data:`CONFUSABLES` too, the four Hangul fillers (:data:`FILLERS`),
which most fonts draw as a blank, are read as a space where the rules before dropped them as
ignorable: ``is\u3164blue`` is ``is blue``, not ``isblue``. Texts with no ESC, no U+009B and
no Hangul filler have the keys they had under :data:`ESCAPES_KEPT`, to the bit.

A text in ASCII has its :data:`VISIBLE` fingerprint among its keys (its folded and as-written
keys are that one), so an item consumed under that rule is found again under this one, and the
other way round. Keys of different kinds are compared too: each is a text the item reads as
(up to case, for the folded ones), so two items sharing any are one. The
confusable classes are Unicode's (``confusables.txt``), as the ``confusable-homoglyphs``
package ships them (its data file, read once; never its loader, which an environment variable
can point elsewhere).

Records written before a rule keep theirs: an item is compared with one under the rule it was
recorded under (:func:`fingerprints_under`). Under :data:`ESCAPES_KEPT` an item matches by its
keys as that rule read it (an escape sequence's ESC dropped, the rest of it kept: an item
consumed then in colour is found again verbatim) and by its keys now (one consumed then
without colour is found in colour); under every rule before it, by those too. Under
:data:`CONTROLS_KEPT` an item matches by its keys as that rule read it (control characters
kept) and by its keys now. Under
:data:`SKELETON_CASED` (the skeleton kept its case) an item matches by that skeleton and by its
keys now. Under :data:`VISIBLE` an item matches by its own
text so normalised and by its keys now — an item consumed then in ASCII is found again with
look-alike letters swapped in. Under :data:`NORMALISED` (invisible characters kept), it also
matches by its text so normalised — an item consumed then without them is found again whatever
invisible characters are added now; one consumed then with them is found again verbatim.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from assay.data import render_transcript
from assay.errors import AssayError
from assay.inputs._items import sample_of
from assay.types import Item, stable_hash

CONFUSABLES = "confusables-skeleton-casefold-escapes-unseen-nfkc-casefold-whitespace"
"""How items are fingerprinted now: :data:`ESCAPES_KEPT`'s keys with a terminal's escape
sequences dropped whole first (:data:`ESCAPES`: ``\\x1b[1m``, not its ESC alone) and the
Hangul fillers read as a space (:data:`FILLERS`), not dropped; a transcript read as its
rendering shows it to the judge (no step numbers, tool-call ids or other fields of a log)."""
ESCAPES_KEPT = "confusables-skeleton-casefold-unseen-nfkc-casefold-whitespace"
"""How items were fingerprinted before escape sequences were dropped whole (their ESC dropped
as a control, the rest of them read as text): :data:`CONTROLS_KEPT`'s keys with every
character nobody sees dropped (:func:`unseen`: control characters that are no whitespace,
private-use ones, beside :func:`invisible`'s) and a blank that is no whitespace (the braille
blank) read as a space."""
CONTROLS_KEPT = "confusables-skeleton-casefold-visible-nfkc-casefold-whitespace"
"""How items were fingerprinted before control and private-use characters were dropped:
:data:`VISIBLE`'s text with look-alike letters folded (two keys) and the UTS #39 skeleton
case-folded (a third), an item's keys deduplicated."""
SKELETON_CASED = "confusables-visible-nfkc-casefold-whitespace"
"""How items were fingerprinted before the skeleton key was case-folded (its case kept)."""
VISIBLE = "visible-nfkc-casefold-whitespace"
"""How items were fingerprinted before look-alikes were folded: invisible characters dropped,
then :data:`NORMALISED`'s."""
NORMALISED = "nfkc-casefold-whitespace"
"""How items were fingerprinted before invisible characters were dropped."""
Rule = Literal[
    "confusables-skeleton-casefold-escapes-unseen-nfkc-casefold-whitespace",
    "confusables-skeleton-casefold-unseen-nfkc-casefold-whitespace",
    "confusables-skeleton-casefold-visible-nfkc-casefold-whitespace",
    "confusables-visible-nfkc-casefold-whitespace",
    "visible-nfkc-casefold-whitespace",
    "nfkc-casefold-whitespace",
]

DATA = ("confusable_homoglyphs", "confusables.json")
"""The package (``confusable-homoglyphs``) and the file in it that hold Unicode's confusable
classes."""

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


class _Lazy(dict[int, "int | str | None"]):
    """A ``str.translate`` table that works out a code point's entry the first time it meets
    it (and keeps it): the characters a data set uses, not all of Unicode's."""

    def __init__(self, entry: Callable[[str], int | str | None]) -> None:
        super().__init__()
        self._entry = entry

    def __missing__(self, code: int) -> int | str | None:
        value = self[code] = self._entry(chr(code))
        return value


BLANKS = frozenset("\u2800")
"""Characters that show as a blank but are no whitespace (``str.isspace``): the braille
pattern blank. Read as a space, so that one added, or standing for a space, changes nothing."""
FILLERS = frozenset("\u115f\u1160\u3164\uffa0")
"""The Hangul fillers (choseong, jungseong, the filler and its halfwidth form): default-
ignorable, so dropped until :data:`CONFUSABLES` took escape sequences apart — but most fonts
draw them as a blank as wide as a letter, and one standing for a space (``is\u3164blue``)
made ``isblue`` of the text, a new item that reads as the old one. Since then read as a space,
like :data:`BLANKS`: one added between words changes nothing, one standing for a space neither."""


def unseen(char: str) -> bool:
    """Whether ``char`` is one nobody sees in a text: :func:`invisible`, a control character
    that is no whitespace (``\\x07`` BEL, ``\\x7f`` DEL, the C1 controls; a tab or a line break is
    whitespace), or a private-use character (no agreed glyph: nothing, or an empty box). Code
    points unassigned in this Python's Unicode are kept: which they are moves with the
    interpreter's version, and a key must not."""
    if invisible(char):
        return True
    category = unicodedata.category(char)
    return (category == "Cc" and not char.isspace()) or category == "Co"


_DROP_INVISIBLE = _Lazy(lambda c: None if invisible(c) else ord(c))
_DROP_UNSEEN = _Lazy(lambda c: None if unseen(c) else 32 if c in BLANKS else ord(c))
_SEEN_NOW = _Lazy(lambda c: 32 if c in BLANKS | FILLERS else None if unseen(c) else ord(c))
"""What :func:`_seen` keeps of a character: :data:`_DROP_UNSEEN`'s, a Hangul filler a space."""
_ASCII_CONTROLS = re.compile("[\x00-\x08\x0e-\x1b\x7f]")
"""The ASCII characters :func:`unseen` drops: its controls less the whitespace ones."""


_IN_SEQUENCE = r"\x00-\x17\x19\x1c-\x1f\x7f"
"""The control characters a terminal acts on inside an escape or control sequence, which goes
on after them (DEL: ignored there): every C0 control but CAN and SUB (which cancel it) and ESC
(which begins another)."""
ESCAPES = re.compile(
    rf"\x1b(?:[{_IN_SEQUENCE}]*"
    # a control sequence (CSI): ESC [ (or U+009B, below), parameter bytes 0x30-0x3F and
    # intermediate bytes 0x20-0x2F (in any order: a terminal ignores one out of place), a final
    # byte 0x40-0x7E
    rf"(?:\[[{_IN_SEQUENCE}\x20-\x3f]*[\x40-\x7e]?"
    # a control string: OSC (ESC ]) up to BEL or ST (ESC \, whose ESC ends the string and is
    # read next, or U+009C), DCS, SOS, PM, APC (ESC P, X, ^, _) up to ST; CAN, SUB and every
    # C1 control end one too; a control character in one is part of it
    rf"|\](?P<osc>[^\x07\x18\x1a\x1b\x80-\x9f]*\x07?)"
    rf"|[PX^_](?P<string>[^\x18\x1a\x1b\x80-\x9f]*))"
    # any other escape sequence: intermediate bytes 0x20-0x2F, a final byte 0x30-0x7E
    rf"|[{_IN_SEQUENCE}\x20-\x2f]*[\x30-\x7e]?)"
    rf"|\x9b[{_IN_SEQUENCE}\x20-\x3f]*[\x40-\x7e]?"
)
"""A terminal's escape sequences (ECMA-48's control sequences and control strings, ECMA-35's
escape sequences) as a terminal reads them: each up to where it breaks off, if it does (the end
of the text, CAN, SUB, another ESC, a C1 control, a character beyond ASCII) — what a terminal
took into a sequence it never shows."""
_ACTED_ON = {c: None for c in range(128) if c == 0x20 or not chr(c).isspace()} | {0x9B: None}
"""A sequence's characters less those to keep in its place: the whitespace controls a
terminal acts on inside one (a line break in a colour code still breaks the line; a space
there is an intermediate byte, part of the sequence)."""
_ACTED_ON_IN = re.compile(rf"[\x1b\x9b][{_IN_SEQUENCE}\x20-\x3f\[]*?[\t-\r\x1c-\x1f]")
"""Where a whitespace control may stand inside a sequence (or before a control string's
opener), and more: found nowhere in a text, as in most, its sequences are all dropped with
nothing kept, without a call for each (:func:`_without_escape`)."""


def _without_escape(match: re.Match[str]) -> str:
    """What a terminal shows of one of :data:`ESCAPES`: the whitespace controls it acted on
    inside it (none inside a control string, which holds them)."""
    sequence = match.group()
    body = max(match.start("osc"), match.start("string"))
    if body >= 0:
        sequence = sequence[: body - match.start()]
    return sequence.translate(_ACTED_ON)


def _seen(text: str) -> str:
    """``text`` as a terminal shows it, with no escape sequence (:data:`ESCAPES`), without the
    characters nobody sees (:func:`unseen`), a blank that is no whitespace — a Hangul filler
    too (:data:`FILLERS`) — a space."""
    if "\x1b" in text or "\x9b" in text:
        text = ESCAPES.sub(_without_escape if _ACTED_ON_IN.search(text) else "", text)
    if text.isascii():
        return _ASCII_CONTROLS.sub("", text) if _ASCII_CONTROLS.search(text) else text
    return text.translate(_SEEN_NOW)


def _seen_escapes_kept(text: str) -> str:
    """``text`` without the characters nobody sees (:func:`unseen`), a blank that is no
    whitespace a space: what :data:`ESCAPES_KEPT` dropped (an escape sequence's ESC, the rest of
    it kept)."""
    if text.isascii():
        return _ASCII_CONTROLS.sub("", text) if _ASCII_CONTROLS.search(text) else text
    return text.translate(_DROP_UNSEEN)


def _seen_before(text: str) -> str:
    """``text`` without the characters :func:`invisible` names: what the rules before
    :data:`ESCAPES_KEPT` dropped (control and private-use characters kept)."""
    return text if text.isascii() else text.translate(_DROP_INVISIBLE)


def _folded(text: str) -> str:
    """NFKC, case-folded, NFKC again, whitespace collapsed (invisible characters already
    dropped): :data:`VISIBLE`'s rule, and :data:`NORMALISED`'s on a text that keeps them."""
    if text.isascii():
        return " ".join(text.lower().split())
    return " ".join(
        unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).split()
    )


def normalised(value: Any, *, keep_invisible: bool = False) -> Any:
    """``value`` with every string in it normalised as :data:`VISIBLE` reads it: ``"Item 3 "``,
    ``"item 3"``, ``"item\\u200b 3"`` and an NFD spelling are one text. ``keep_invisible``: the
    rule before (:data:`NORMALISED`), for records made under it."""
    return _each_string(value, _folded if keep_invisible else lambda s: _folded(_seen_before(s)))


def _each_string(value: Any, change: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {_each_string(k, change): _each_string(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_each_string(v, change) for v in value]
    return value


# -- Unicode's confusable classes ------------------------------------------------------------


@functools.cache
def _classes() -> list[list[str]]:
    """Unicode's confusable classes (``confusables.txt``: each source character with its
    prototype), as the package's data file lists them: both ways, right-to-left characters
    between left-to-right marks (dropped here)."""
    from importlib.util import find_spec
    from pathlib import Path

    package, name = DATA
    try:
        spec = find_spec(package)  # where it is, not imported
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"no package {package}")
        path = Path(next(iter(spec.submodule_search_locations))) / name
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise AssayError(
            f"Unicode's confusable classes ({name} of the {package} package) cannot be read "
            f"({type(exc).__name__}: {exc}): install assay's dependencies again"
        ) from None
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for source, targets in data.items():
        a = root(source.replace("\u200e", ""))
        for target in targets:
            b = root(target["c"].replace("\u200e", ""))
            if a != b:
                parent[b] = a
    classes: dict[str, list[str]] = {}
    for x in list(parent):
        classes.setdefault(root(x), []).append(x)
    return [sorted(c) for c in classes.values()]


@functools.cache
def _skeleton_table() -> dict[int, str]:
    """Each confusable character's entry in a skeleton: what its class is written as — the
    class's prototype when it is a sequence (``rn`` for ``m``), else one character of it (a
    lowercase ASCII letter, any ASCII character, the lowest code point, in that order), each
    character of a sequence written as its own class is. Only characters NFD leaves as they
    are: a skeleton maps the text's NFD (UTS #39), which holds no other."""

    def nfd(x: str) -> str:
        return unicodedata.normalize("NFD", x)

    one: dict[str, str] = {}
    sequences: dict[str, str] = {}
    for members in _classes():
        singles = [x for x in members if len(x) == 1 and nfd(x) == x]
        longer = [x for x in members if len(x) > 1]
        if longer:
            for x in singles:
                sequences[x] = nfd(min(longer, key=lambda s: (len(s), s)))
            continue
        lower = [x for x in singles if x.isascii() and x.islower()]
        ascii_ = [x for x in singles if x.isascii()]
        for x in singles:
            one[x] = min(lower or ascii_ or singles)
    table = {ord(x): rep for x, rep in one.items() if x != rep}
    for x, sequence in sequences.items():
        table[ord(x)] = "".join(one.get(c, c) for c in sequence)
    return table


_SKELETON = _Lazy(lambda c: _skeleton_table().get(ord(c), ord(c)))


@functools.cache
def _ascii_skeleton() -> tuple[dict[int, int], tuple[tuple[str, str], ...]]:
    """The skeleton of an ASCII text in two steps ``str.translate`` and ``str.replace`` take
    fast: the ASCII characters written as another one (a table of every ASCII code point), and
    those written as a sequence (``m`` as ``rn``)."""
    table = {code: code for code in range(128)}
    longer = []
    for code in range(128):
        entry = _skeleton_table().get(code)
        if entry is None:
            continue
        if len(entry) == 1 and entry.isascii():
            table[code] = ord(entry)
        else:
            longer.append((chr(code), entry))
    # a sequence holds no character a skeleton maps (the table's entries are written as they
    # are), so the replacements do not depend on their order
    return table, tuple(longer)


def _skeleton(text: str) -> str:
    """UTS #39's skeleton of ``text`` (invisible characters already dropped), whitespace
    collapsed: two texts with the same skeleton are confusable."""
    if text.isascii():  # NFD leaves ASCII as it is
        table, longer = _ascii_skeleton()
        text = text.translate(table)
        for char, sequence in longer:
            if char in text:
                text = text.replace(char, sequence)
        return " ".join(text.split())
    nfd = unicodedata.normalize("NFD", text).translate(_SKELETON)
    return " ".join(unicodedata.normalize("NFD", nfd).split())


_KINDS = ("upper", "lower", "digit", "other")
_PREFERRED = {
    "Lu": ("upper", "lower", "digit", "other"),
    "Lt": ("upper", "lower", "digit", "other"),
    "Ll": ("lower", "upper", "digit", "other"),
    "L": ("lower", "upper", "digit", "other"),
    "N": ("digit", "upper", "lower", "other"),
}


def _kind(char: str) -> str:
    if char.isupper():
        return "upper"
    if char.islower():
        return "lower"
    return "digit" if char.isdigit() else "other"


def _look_alike(char: str) -> int | str:
    """The ASCII character ``char`` stands in for, of its own kind (a capital for a capital, a
    digit for a digit…), when its confusable class has one; else what the class is written as
    in a skeleton; ``char`` itself when it is confusable with nothing."""
    if char.isascii():
        return ord(char)
    members = _members().get(char)
    if members is None:
        return ord(char)
    ascii_ = [x for x in members if len(x) == 1 and x.isascii()]
    if ascii_:
        category = unicodedata.category(char)
        order = _PREFERRED.get(category) or _PREFERRED.get(category[0]) or _KINDS[::-1]
        return min(ascii_, key=lambda a: (order.index(_kind(a)), a))
    sequences = sorted((x for x in members if len(x) > 1 and x.isascii()), key=len)
    if sequences:
        return sequences[0]
    return _skeleton_table().get(ord(char), ord(char))


@functools.cache
def _members() -> dict[str, list[str]]:
    """Each confusable character's class."""
    return {x: members for members in _classes() for x in members if len(x) == 1}


_LOOK_ALIKES = _Lazy(_look_alike)


def _ascii_look_alikes(text: str) -> str:
    """``text`` (invisible characters dropped) with each character confusable with an ASCII one
    written as it, then normalised as :data:`VISIBLE` normalises."""
    return _folded(unicodedata.normalize("NFD", text).translate(_LOOK_ALIKES))


Keys = tuple[str, str, str, str, str]
"""A text's :data:`VISIBLE` reading, its folded, as-written and case-folded skeleton keys
(:data:`CONFUSABLES`), and its skeleton with its case kept (:data:`SKELETON_CASED`)."""


def _keys_of(text: str, read: Callable[[str], str] = _seen) -> Keys:
    """``text``'s :data:`Keys` texts; ``read``: what is dropped from it first — as now
    (:func:`_seen`), or as a rule before did (:func:`_seen_escapes_kept`,
    :func:`_seen_before`)."""
    seen = read(text)
    if seen.isascii():
        visible = _folded(seen)
        skeleton = _skeleton(seen)
        return visible, visible, visible, _caseless(skeleton), skeleton
    compatible = unicodedata.normalize("NFKC", seen)
    visible = _folded(compatible)
    skeleton = _skeleton(seen)
    return (
        visible,
        _ascii_look_alikes(visible),
        _ascii_look_alikes(compatible),
        _caseless(skeleton),
        skeleton,
    )


def _caseless(skeleton: str) -> str:
    """A skeleton case-folded, and the skeleton of that case-folded: case-folding a skeleton
    can make letters that have one of their own (``M`` → ``m``, which a skeleton writes as
    ``rn``), so a text re-cased and written with look-alikes (``The home`` with a Greek capital
    iota for each ``l``) comes to the same key as its original (``The HOME``)."""
    return _folded(_skeleton(_folded(skeleton)))


_NAMES: dict[tuple[str, Callable[[str], str]], Keys] = {}


def _name(key: str, read: Callable[[str], str]) -> Keys:
    """:func:`_keys_of` of a mapping's key: the same few names in every item (``request``,
    ``role``…), worked out once."""
    found = _NAMES.get((key, read))
    if found is None:
        found = _keys_of(key, read)
        if len(_NAMES) < 4096:
            _NAMES[key, read] = found
    return found


def _variants(value: Any, read: Callable[[str], str] = _seen) -> tuple[Any, Any, Any, Any, Any]:
    """``value`` with every string in it replaced by each of :func:`_keys_of`'s five texts."""
    if isinstance(value, str):
        return _keys_of(value, read)
    if isinstance(value, dict):
        outs: tuple[dict[Any, Any], ...] = ({}, {}, {}, {}, {})
        for k, v in value.items():
            names = _name(k, read) if isinstance(k, str) else (k, k, k, k, k)
            texts = _variants(v, read)
            for n, out in enumerate(outs):
                out[names[n]] = texts[n]
        return outs  # type: ignore[return-value]
    if isinstance(value, list):
        parts = [_variants(v, read) for v in value]
        return tuple([p[n] for p in parts] for n in range(5))  # type: ignore[return-value]
    return value, value, value, value, value


# stable_hash's JSON (sorted keys, as written), its encoder made once: a key is worked out for
# every item of a run
_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def _hashes(texts: Sequence[Any]) -> list[str]:
    """The distinct ones of ``texts``, hashed as :func:`~assay.types.stable_hash` hashes (32
    hex digits), in order (equal texts hashed once)."""
    out: list[Any] = []
    for text in texts:
        if text not in out:
            out.append(text)
    return [hashlib.sha256(_JSON.encode(t).encode("utf-8")).hexdigest()[:32] for t in out]


def item_keys(item: Item) -> list[str]:
    """What makes a labelled item the same item, under the rule now (:data:`CONFUSABLES`):
    the text the judge read — not its id or its reference —, its keys (one to three): two
    items sharing one are one item."""
    _, folded, written, skeleton, _ = _variants(_judged_text(item))
    return _hashes((folded, written, skeleton))


def sample_keys(item: Item) -> list[str]:
    """The key an epoch of an Inspect sample shares with the sample's other epochs (its task,
    model and sample: :func:`~assay.inputs.sample_of`), none for any other item. Each epoch is
    judged on a transcript of its own, but all share the sample's input and reference, and a
    judge's error on one recurs on the others: what consumes, or tunes on, one epoch uses them
    all. Recorded and compared beside :func:`item_keys` where items are used up."""
    sample = sample_of(item)
    return [] if sample is None else [stable_hash(f"inspect sample {sample}", n=32)]


def used_keys(item: Item) -> list[str]:
    """What a record of used items (a certificate's consumed items, a tuning's) keeps of one:
    its :func:`item_keys` and its :func:`sample_keys`."""
    return item_keys(item) + sample_keys(item)


def fingerprints_under(rule: object, items: Sequence[Item]) -> list[set[str]]:
    """Each item's fingerprints to compare with a record made under ``rule``: under
    :data:`CONFUSABLES`, its keys now; under :data:`ESCAPES_KEPT`, those and its keys as that
    rule read it (an escape sequence's ESC dropped, the rest of it kept), and so under every
    rule before; under :data:`CONTROLS_KEPT`, those and its keys with control characters kept;
    under :data:`SKELETON_CASED`, those and its skeleton with its case kept; under
    :data:`VISIBLE`, those and its fingerprint then; under :data:`NORMALISED`, those and that of
    its text with invisible characters kept; under none (certificates issued before items were
    normalised), that of its text as it is. And, under every rule, its :func:`sample_keys`
    (which a record before them does not hold); and, for a pair, the fingerprints of the pair
    without its response B (which records before it was read kept: such a record still finds
    its pair, and any pair with its request and response A)."""
    out = []
    for item in items:
        fingerprints = _fingerprints(rule, item) | set(sample_keys(item))
        if isinstance(item.meta.get("response_b"), str):
            # a record made before a pair's response B was read kept the pair without it
            fingerprints |= _fingerprints(rule, item, pair=False)
        if item.transcript is not None and rule != CONFUSABLES:
            # a record made before a transcript was read as rendered kept every field of it
            fingerprints |= _fingerprints(rule, item, rendered=False)
            if isinstance(item.meta.get("response_b"), str):
                fingerprints |= _fingerprints(rule, item, pair=False, rendered=False)
        out.append(fingerprints)
    return out


RULES = (CONFUSABLES, ESCAPES_KEPT, CONTROLS_KEPT, SKELETON_CASED, VISIBLE, NORMALISED)
"""Every rule items were fingerprinted under, the one now first."""


def _fingerprints(
    rule: object, item: Item, *, pair: bool = True, rendered: bool = True
) -> set[str]:
    """One item's text fingerprints under ``rule`` (:func:`fingerprints_under`)."""
    text = _judged_text(item, pair=pair, rendered=rendered)
    if rule not in RULES:
        return {stable_hash(text, n=32)}
    now = set(_hashes(_variants(text)[1:4]))
    if rule == CONFUSABLES:
        return now
    # a record made before escape sequences were dropped whole: its item as that rule read it
    # (verbatim, ``[1m`` and all), or as read now (one recorded without them, found again in
    # colour); every rule before it matched an item by those keys too (its keys now, then), and
    # still does
    if _escaped(text):
        now |= set(_hashes(_variants(text, _seen_escapes_kept)[1:4]))
    if rule == ESCAPES_KEPT:
        return now
    # a record made before control characters were dropped: its item as that rule read it
    # (verbatim, control characters and all), or as read now (one recorded without them, found
    # again with them added)
    visible, *keys = _variants(text, _seen_before)
    if rule == CONTROLS_KEPT:
        fingerprints = now | set(_hashes(keys[:3]))
    elif rule == SKELETON_CASED:
        fingerprints = now | set(_hashes(keys))
    else:
        fingerprints = now | set(_hashes((visible, *keys)))
    if rule == NORMALISED:
        fingerprints.add(stable_hash(normalised(text, keep_invisible=True), n=32))
    return fingerprints


def _escaped(value: Any) -> bool:
    """Whether a string in ``value`` (a mapping's keys too) holds an ESC or a U+009B (CSI): the
    texts :data:`ESCAPES_KEPT` gave other keys."""
    if isinstance(value, str):
        return "\x1b" in value or "\x9b" in value
    if isinstance(value, dict):
        return any(_escaped(k) or _escaped(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_escaped(v) for v in value)
    return False


def _judged_text(item: Item, *, pair: bool = True, rendered: bool = True) -> dict[str, Any]:
    """The text the judge read: request, response, transcript, and a pair's response B
    (``meta["response_b"]``: two pairs with one request and one response A are two items unless
    their B is one too). ``pair=False``: without response B, as every rule read a pair before.

    Of a transcript, what its rendering shows the judge (:func:`~assay.data.render_transcript`):
    each message's role, content, tool calls (function and arguments), tool name and error —
    not its step number, tool-call id or any other field a log carries, which the judge never
    reads: with them, the same conversation renumbered was a new item, and a consumed one could
    be certified again. ``rendered=False``: every field, as the rules before
    :data:`CONFUSABLES` read it."""
    text = item.model_dump(mode="json", include={"request", "response", "transcript"})
    if rendered and item.transcript is not None:
        text["transcript"] = render_transcript(item.transcript)
    if pair and isinstance(b := item.meta.get("response_b"), str):
        text["response_b"] = b
    return text


def same_items(items: Sequence[Item]) -> list[str | None]:
    """Which of ``items`` are one item, by position: items that share a text key
    (:func:`item_keys`: the same text under another id, re-spaced, re-cased, with look-alike
    letters…) or an Inspect sample (:func:`sample_keys`: its epochs) are one group — and so,
    step by step, are items that share a key with any of them —, named after its first item's
    id; an item alone is None. What a figure over labelled items must take as one unit: the
    same item repeated under new ids is no new evidence."""
    roots = key_groups([used_keys(it) for it in items])
    sizes = Counter(roots)
    return [f"item {items[r].id}" if sizes[r] > 1 else None for r in roots]


def key_groups(keys: Sequence[Iterable[str]]) -> list[int]:
    """Units that share a key are one group, and so, step by step, are units that share a key
    with any of them: each unit's group, by position, as the position of the group's first
    unit (a unit alone: its own). ``keys``: each unit's keys — an item's :func:`used_keys`, say,
    with anything else that makes two units one."""
    parent = list(range(len(keys)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    first: dict[str, int] = {}
    for k, unit in enumerate(keys):
        for key in unit:
            a, b = root(first.setdefault(key, k)), root(k)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [root(k) for k in range(len(keys))]
