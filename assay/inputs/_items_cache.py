"""The items cache: a local table's items, read once per content of the file, kept in a file that
cannot vouch for itself.

Reading a table goes through ``datasets`` (pandas, pyarrow: a second or two of imports), so its
items are kept in ``<cache_dir>/../items/<key>.jsonl``. The key is the SHA-256 of the table's
bytes — not its size and modification time, which an edit can keep (two labels changed, the old
time set back) — with everything else that makes the items: the path, the column map, scale and
limit, the assay version.

The cache file lies in the working folder, where anyone can edit it, and its items decide a run's
identity and figures. So beside it ``<key>.mac`` holds the HMAC-SHA256, under the signing key
(:mod:`assay._signing`), of the key and the file's bytes, computed as the items are written. A
cache file is used only while that signature holds over it; one edited, damaged, cut short or
without its signature is read again from the table. Checking it is one pass of SHA-256 over the
file: cheaper than parsing its items, which the run does anyway.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator
from pathlib import Path

from assay import _signing
from assay._files import sha256_file
from assay.runs import write_atomic
from assay.types import Item, stable_hash

Reader = Callable[[], Iterator[Item]]


def cached_items(source: Path, made_by: list[object], read: Reader, folder: Path) -> Path:
    """The items cache file of the table ``source`` read by ``read()`` with the settings
    ``made_by`` (JSON values): the one in ``folder`` when its signature holds, else written
    now, a row at a time, and signed."""
    key = stable_hash([sha256_file(source), str(source.resolve()), *made_by])
    cached, signature = folder / f"{key}.jsonl", folder / f"{key}.mac"
    secret = _signing.key(create=True)
    if _holds(cached, signature, _keyed(secret, key)):
        return cached
    folder.mkdir(parents=True, exist_ok=True)
    mac = _keyed(secret, key)

    def lines() -> Iterator[str]:
        for it in read():
            line = it.model_dump_json() + "\n"
            mac.update(line.encode("utf-8"))
            yield line

    write_atomic(cached, lines())  # row by row; the signature once the file is whole
    write_atomic(signature, mac.hexdigest())
    return cached


def _keyed(secret: bytes, key: str) -> hmac.HMAC:
    return hmac.new(secret, f"assay items cache\n{key}\n".encode(), hashlib.sha256)


def _holds(cached: Path, signature: Path, mac: hmac.HMAC) -> bool:
    """Whether ``signature`` holds the signature of ``cached``'s bytes (both there)."""
    try:
        expected = signature.read_text(encoding="utf-8").strip()
        with cached.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                mac.update(block)
    except (OSError, UnicodeDecodeError):
        return False
    return hmac.compare_digest(mac.hexdigest(), expected)
