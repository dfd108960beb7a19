"""The embedded model's OpenMP wait policy: llama.cpp's threads sleep at a barrier
instead of spinning, unless the user chose otherwise. libgomp reads the policy once, when
llama_cpp loads it, so the engine module must set it before anything loads llama_cpp."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, assay, assay.api
from assay.lm import make_lm
maps = lambda: open('/proc/self/maps').read()
before = 'libgomp' in maps()  # nothing assay imports up front loads llama.cpp's OpenMP
make_lm('local')  # the path a user takes to the embedded model: the engine module, not yet a load
print(before, os.environ.get('OMP_WAIT_POLICY'))
"""


def _probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_the_engine_sets_a_passive_wait_policy_before_llama_cpp_loads():
    assert _probe() == ["False", "PASSIVE"]


def test_a_users_wait_policy_wins():
    assert _probe(OMP_WAIT_POLICY="active") == ["False", "active"]
