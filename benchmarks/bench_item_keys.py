"""What working out an item's keys costs (certify's consumed items, tuning records, conformal's
overlap, estimate's shared items: :mod:`assay.inputs._item_text`), per item, in CPU time.

N two-field items (a request and a response of some 150 characters each) of five kinds: ASCII,
accented Latin, Cyrillic, ASCII with look-alike letters of other scripts swapped in, and ASCII
with a third of its words in a terminal's colours (escape sequences). Each kind is timed once
over all N items, after one item has built the confusable tables.

    PYTHONPATH=$PWD python benchmarks/bench_item_keys.py            # 100,000 items a kind
    PYTHONPATH=$PWD python benchmarks/bench_item_keys.py 20000

Run it with ``PYTHONPATH`` at another checkout to measure that one: a checkout from before
look-alikes were folded has one fingerprint an item (``item_fingerprint``), timed the same way.
"""

from __future__ import annotations

import random
import sys
import time

import assay.inputs._item_text as item_text
from assay.types import Item

WORDS = "the snow is red green blue grass answer question item because of which".split()
KINDS = {
    "ascii": WORDS,
    "accented": [*WORDS, "café", "naïve", "résumé"],
    "cyrillic": ["снег", "красный", "трава", "зелёная", "ответ"],
    "look-alikes": [w.replace("e", "\u0435").replace("o", "\u03bf") for w in WORDS],
    "in colour": [f"\x1b[1;3{k % 8}m{w}\x1b[0m" if k % 3 == 0 else w for k, w in enumerate(WORDS)],
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(0)
    keys = getattr(item_text, "item_keys", None) or item_text.item_fingerprint

    def text(k: int, words: list[str]) -> str:
        return " ".join(rng.choice(words) for _ in range(25)) + f" {k}."

    for kind, words in KINDS.items():
        items = [
            Item(id=f"i{k}", request=f"Question {k}: {text(k, words)}", response=text(k, words))
            for k in range(n)
        ]
        keys(items[0])  # the tables, built once a process
        start = time.process_time()
        for it in items:
            keys(it)
        spent = time.process_time() - start
        print(f"{kind:12s} {n:,} items: {spent:.2f} s CPU, {spent / n * 1e6:.1f} µs an item")


if __name__ == "__main__":
    main()
