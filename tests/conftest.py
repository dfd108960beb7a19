"""Shared test setup: offline environment, and no DSPy response cache leaking between tests."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

import assay  # noqa: F401  (offline-safe environment defaults)

# Runs started in this process end here, as in a notebook: a helper interpreter per run would
# cost the suite seconds each (tests/runs/test_sidecar.py covers the sidecar, and
# the commands tests start as processes use it as a user's do: see tests/processes.py).
os.environ["ASSAY_SIDECAR"] = "0"

# The signing key of the seals, certificates and calibrations the tests write: one for the
# session (the processes tests start inherit it), never the user's own — and the key's records
# (the heads of journals and signed histories, $XDG_STATE_HOME/assay/keys/<key id>) beside it,
# never in the user's state folder.
_KEYS = tempfile.mkdtemp(prefix="assay-test-key-")
atexit.register(shutil.rmtree, _KEYS, ignore_errors=True)
os.environ["ASSAY_SIGNING_KEY_FILE"] = str(Path(_KEYS) / "signing.key")
os.environ["XDG_STATE_HOME"] = str(Path(_KEYS) / "state")

# A suite started in the background of a script (`pytest &`, no job control) inherits Ctrl-C
# ignored, and so would every command it starts — the Ctrl-C tests then waited 90 s on a command
# that could not hear it. A handler set here is reset to the default in the processes it starts,
# whose Python then turns Ctrl-C into KeyboardInterrupt as a user's shell would have it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite starts some 300 interpreters (commands as users run them, their helper interpreters,
# reports drawn apart). Under PYTHONDONTWRITEBYTECODE each compiled assay's modules again from
# source — a third of a second of CPU apiece, a minute of the suite's — where Python by default
# writes their bytecode once beside the sources (``__pycache__``, which git ignores) and reads it
# after. The processes the tests start do that.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

EXAMPLE_DATA = Path(__file__).resolve().parents[1] / "examples" / "data"


@pytest.fixture(autouse=True)
def _no_dspy_cache():
    """Each test starts with DSPy's response caches off, so LM call counts are exact."""
    import dspy

    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    yield
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)


@pytest.fixture(autouse=True)
def _a_machine_of_its_own(tmp_path_factory, monkeypatch):
    """Each test its own records of the signing key ($XDG_STATE_HOME: the journals' heads, and
    the key's journal of every certificate it signed, which spans every ledger on a machine):
    tests certify the same fixture run in ledgers of their own, as if each were another
    machine. Fixtures of a wider scope keep the session's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(autouse=True)
def _one_embedded_model_at_a_time(request, tmp_path_factory, monkeypatch):
    """The tests marked ``local_model`` run one at a time across the suite's workers: llama.cpp
    runs a thread per core and its threads wait on each other spinning, so two models sharing
    two cores each took two to three times as long (a ToolEmu case: 26-46 s, 83-99 s beside
    another). A test waits for the other's end instead.

    And on one llama.cpp thread (``ASSAY_LLAMA_THREADS=1``, unless set): the other worker's
    tests keep the second core busy, and a model's two threads, meeting after every operation,
    wait for the one that is not running — beside a process that kept one core busy, the ToolEmu
    case took 47 s on two threads and 38 s on one, the AgentHarm harness 36 and 31 s. The
    default thread count is what the README's first command and the local-model benchmarks
    run (``benchmarks/bench_local.py``)."""
    if request.node.get_closest_marker("local_model") is None:
        yield
        return
    import fcntl

    if not os.environ.get("ASSAY_LLAMA_THREADS"):
        monkeypatch.setenv("ASSAY_LLAMA_THREADS", "1")
    shared = tmp_path_factory.getbasetemp().parent  # the workers' common folder
    with open(shared / "assay-local-model.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def pytest_collection_modifyitems(config, items):
    """The order the suite's two workers take its files in (``--dist loadfile`` with
    ``--no-loadscope-reorder``: each file whole on one worker, the next file to the first worker
    free). The files with tests on the embedded model, which run one at a time across the
    workers (:func:`_one_embedded_model_at_a_time`), are spread evenly among the others: taken
    together — as xdist's own order, most tests first, put them, last — a worker sat waiting for
    the other's model. The others go longest first, as far as the markers tell: a test that
    starts processes, waits on purpose or starts Ray (``slow``, ``ray``) weighs as twenty —
    taken by their number of tests alone, the two-node Ray cluster's three (~2 minutes) came
    among the last files, and one worker ran them while the other had nothing left."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    embedded = [
        f for f, its in files.items() if any(i.get_closest_marker("local_model") for i in its)
    ]

    def weight(f: str) -> int:
        slow = sum(
            1 for i in files[f] if i.get_closest_marker("slow") or i.get_closest_marker("ray")
        )
        return len(files[f]) + 19 * slow

    others = sorted((f for f in files if f not in embedded), key=lambda f: -weight(f))
    gap = max(1, len(others) // (len(embedded) + 1))
    order = []
    for k, f in enumerate(others, start=1):
        order.append(f)
        if k % gap == 0 and embedded:
            order.append(embedded.pop(0))
    order += embedded
    items[:] = [item for f in order for item in files[f]]


@pytest.fixture
def example_data() -> Path:
    """The real data sets copied into the repository (``examples/data``, with their licences)."""
    assert EXAMPLE_DATA.is_dir(), f"example data missing from the repository: {EXAMPLE_DATA}"
    return EXAMPLE_DATA
