"""``examples/inspect_scorer.py`` — the docs' Inspect example — runs with no network: a judge
measured by ``assay evaluate`` on the loopback stub, then scoring an Inspect eval whose solver is
``mockllm/model``, with ``HF_HUB_OFFLINE=1``, every HTTP(S) request outside the loopback sent to a
dead proxy, and tiktoken's cache an empty folder that stays empty (no tokenizer fetched)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.processes import REPO


def test_the_inspect_example_runs_offline(tmp_path):
    tokenizers = tmp_path / "tiktoken"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "TIKTOKEN_CACHE_DIR": str(tokenizers),
        "HTTP_PROXY": "http://127.0.0.1:9",  # nothing listens there: a fetch fails at once
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    env.pop("ASSAY_SIDECAR", None)
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "inspect_scorer.py"), "--out", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "{'scored_mean': 0.5, 'unscored': 0.0}" in lines
    assert "item 20: verdict 1 (human label 1), judge's κ 1 on n = 20" in lines
    assert "item 21: verdict 0 (human label 0), judge's κ 1 on n = 20" in lines
    assert not tokenizers.exists() or not any(tokenizers.iterdir())
    assert list((tmp_path / "logs").glob("*.eval"))  # Inspect's log of the eval
