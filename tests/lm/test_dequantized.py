"""The embedded default runs its package's Q4_1 weights dequantized to F32: the copy
holds exactly the weights Q4_1 defines (``d·q + m``), checked here by decoding the package's
blocks with numpy from a GGUF header read by hand; it is written once; and it is part of the
embedded judge's identity, so no answer of the Q4_1 file is reused as the F32 model's."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from assay.lm._spec import ModelSpec
from assay.programs import JudgeConfig

pytestmark = pytest.mark.local_model

F32, Q4_1 = 0, 3  # ggml type ids
_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}


class _Header:
    """The tensor table of a GGUF file (v3), read with ``struct``: name → (type, shape, start)."""

    def __init__(self, path: Path):
        self.buf = path.read_bytes()
        self.pos = 4
        assert self.buf[:4] == b"GGUF" and self._read("I") == 3
        n_tensors, n_kv = self._read("Q"), self._read("Q")
        alignment = 32
        for _ in range(n_kv):
            key = self._string()
            value = self._value(self._read("I"))
            if key == "general.alignment":
                alignment = value
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            shape = [self._read("Q") for _ in range(self._read("I"))]
            infos.append((name, self._read("I"), shape, self._read("Q")))
        data = -(-self.pos // alignment) * alignment
        self.tensors = {name: (kind, shape, data + at) for name, kind, shape, at in infos}

    def _read(self, fmt: str):
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def _string(self) -> str:
        size = self._read("Q")
        self.pos += size
        return self.buf[self.pos - size : self.pos].decode("utf-8")

    def _value(self, kind: int):
        if kind == 8:
            return self._string()
        if kind == 9:
            item, count = self._read("I"), self._read("Q")
            return [self._value(item) for _ in range(count)]
        return self._read(_SCALARS[kind])


def _q4_1(header: _Header, name: str) -> np.ndarray:
    """A Q4_1 tensor's weights as Q4_1 defines them: blocks of 32, each an F16 scale ``d``,
    an F16 minimum ``m`` and 16 bytes of 4-bit ``q`` (low nibbles first), weight = d·q + m."""
    kind, shape, start = header.tensors[name]
    assert kind == Q4_1
    n = int(np.prod(shape))
    blocks = np.frombuffer(header.buf, np.uint8, n // 32 * 20, start).reshape(-1, 20)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, 4:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
    return (q * d + m).reshape(-1)  # q·d is exact in F32 (4 × 11 bits): one rounding, the sum


def test_the_default_runs_exactly_its_packages_weights_in_f32(tmp_path, monkeypatch):
    from assay.lm._local import LlamaCppEngine, default_gguf_path

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    engine = LlamaCppEngine.for_model("local")
    assert engine.path.is_relative_to(tmp_path) and engine.flash_attn
    assert engine.name == "local/SmolLM2-135M-Instruct.Q4_1.f32"
    packaged, copy = _Header(default_gguf_path()), _Header(engine.path)
    assert packaged.tensors.keys() == copy.tensors.keys()
    quantized = [n for n, (kind, _, _) in packaged.tensors.items() if kind == Q4_1]
    assert len(quantized) == 210
    assert {copy.tensors[n][0] for n in copy.tensors} == {F32}
    for name in (quantized[0], "blk.29.ffn_up.weight"):
        kind, shape, start = copy.tensors[name]
        weights = np.frombuffer(copy.buf, np.float32, int(np.prod(shape)), start)
        np.testing.assert_array_equal(weights, _q4_1(packaged, name))
    # written once: a second engine reads the same file, not a new copy
    written = engine.path.stat().st_mtime_ns
    assert LlamaCppEngine.for_model("local:default").path == engine.path
    assert engine.path.stat().st_mtime_ns == written
    assert [p.name for p in engine.path.parent.iterdir()] == [engine.path.name]
    engine.path.unlink()  # 540 MB: pytest keeps its last three temporary folders


def test_the_f32_runtime_is_part_of_the_embedded_judges_identity():
    from assay.lm._local import default_gguf_path

    packaged = f"local:{default_gguf_path()}"
    assert ModelSpec(model="local").identity()["runtime"] == "f32 weights, flash attention"
    assert "runtime" not in ModelSpec(model=packaged).identity()
    scale = {"kind": "binary", "labels": ["False", "True"]}
    default = JudgeConfig(name="j", model="local", scale=scale, instruction="Judge.")
    assert default.config_hash() != default.model_copy(update={"model": packaged}).config_hash()


def test_an_unwritable_cache_is_one_line_naming_the_folder_and_the_variable(tmp_path, monkeypatch):
    from assay.errors import ModelError
    from assay.lm._local import LlamaCppEngine

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(blocked))
    with pytest.raises(ModelError, match=r"cannot write .* F32 copy in .*file.*ASSAY_CACHE_DIR"):
        LlamaCppEngine.for_model("local")
