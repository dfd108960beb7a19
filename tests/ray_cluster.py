"""A Ray cluster of several nodes on this machine, started as a user starts one: ``ray start
--head`` and ``ray start --address`` for each further node, every node with its own CPU, its own
temp dir and its own ports, and every process a client of it (``ray status``, an ``assay``
command) given the cluster's token.

Each ``ray start --block`` runs in a session of its own, which holds the node's raylet and its
workers: a node is killed, or the cluster stopped, by signalling exactly those sessions' processes
— never ``ray stop``, which ends every Ray process of the machine, other people's included.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STARTED = "Ray runtime started"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    """One ``ray start --block`` process (the leader of its session) and its log."""

    name: str
    process: subprocess.Popen
    log: Path
    temp_dir: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def signal(self, sig: int) -> None:
        """``sig`` to every process of the node: its session's (Ray puts each worker in a
        process group of its own, but they stay in the session ``ray start`` began)."""
        for pid in session_pids(self.process.pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def session_pids(sid: int) -> list[int]:
    """The processes of session ``sid`` (field 6 of ``/proc/<pid>/stat``), leader last."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[3]) == sid:
            pids.append(int(entry.name))
    return sorted(pids, key=lambda p: p == sid)


class NodeExited(RuntimeError):
    """A node's ``ray start`` ended before the node was up (or counted)."""


class RayCluster:
    """``with RayCluster(cpus_per_node=1) as cluster:`` starts a head; :meth:`add_node` starts
    the others. ``cluster.address`` is the head's (``127.0.0.1:<port>``), ``cluster.client_env`` the
    variables a client of the cluster needs."""

    def __init__(self, *, cpus_per_node: int = 1, object_store_mb: int = 100) -> None:
        self.cpus = cpus_per_node
        self.store_bytes = object_store_mb * 1_000_000
        # short: Ray's socket paths, under the temp dir, are limited to 107 characters
        self.root = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, Node] = {}
        self.started = 0  # nodes started, a failed start included (each its own temp dir)
        # what a client of the cluster (``ray status``, an ``assay`` command) is given: the
        # cluster's own token (a user's clusters take theirs from ``ray get-auth-token``)
        self.client_env = {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.env = {
            **os.environ,
            **self.client_env,
            "RAY_memory_monitor_refresh_ms": "0",  # no OOM killer on a shared machine
            # a killed node marked dead after 3 failed checks a second apart, not 5 at 3 s
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
            # a node's raylet registers with the head within this many seconds or its
            # ``ray start`` gives up: Ray's 30 s is missed on a loaded 2-core machine
            "RAY_raylet_start_wait_time_s": "180",
            "PYTHONPATH": str(REPO),
        }
        self.env.pop("RAY_ADDRESS", None)

    def __enter__(self) -> RayCluster:
        try:
            self._start("head", ["--head", f"--port={self.port}", "--include-dashboard=false"])
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def add_node(self, name: str) -> Node:
        """One more node (``resources: {name: 1}``), joined to the head; returns once the
        cluster counts it, and no longer counts a killed node of the same name (Ray marks a
        node dead only when its health checks have failed, seconds after the kill)."""
        try:
            node = self._start(name, [f"--address={self.address}"])
        except NodeExited:  # once more: a node's start can time out on a loaded machine
            self.nodes[name].signal(signal.SIGKILL)  # what the failed start left running
            node = self._start(name, [f"--address={self.address}"])
        live = {n.name for n in self.nodes.values() if n.alive()}
        self._wait(
            lambda: (
                (ids := self.node_ids()).keys() == live and all(len(v) == 1 for v in ids.values())
            ),
            node,
            f"count {len(live)} nodes, one of each name",
        )
        return node

    def _start(self, name: str, args: list[str]) -> Node:
        self.started += 1
        temp_dir = self.root / f"n{self.started}"
        temp_dir.mkdir()
        log = self.root / f"{name}{self.started}.log"
        ports = [
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]
        with log.open("w") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ray.scripts.scripts",
                    "start",
                    *args,
                    f"--num-cpus={self.cpus}",
                    f"--resources={json.dumps({name: 1})}",
                    f"--object-store-memory={self.store_bytes}",
                    f"--temp-dir={temp_dir}",
                    "--node-ip-address=127.0.0.1",
                    "--disable-usage-stats",
                    "--block",
                    *ports,
                ],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the node's processes in a session of their own
            )
        node = self.nodes[name] = Node(name, process, log, temp_dir)
        self._wait(lambda: STARTED in log.read_text(errors="replace"), node, "to start")
        return node

    def _wait(self, ready: Any, node: Node | None, what: str, timeout: float = 240) -> None:
        end = time.monotonic() + timeout
        while not ready():
            if node is not None and not node.alive():
                raise NodeExited(f"ray node {node.name} exited: {node.log.read_text()[-3000:]}")
            if time.monotonic() > end:
                raise RuntimeError(f"the Ray cluster did not {what} in {timeout:.0f} s")
            time.sleep(0.5)

    def python(self, code: str, timeout: float = 300) -> Any:
        """Run ``code`` in a driver connected to the cluster; what it passes to ``answer``,
        as JSON (on a line of its own: Ray may print to stdout too)."""
        script = (
            "import json, ray\n"
            "def answer(value): print('\\nANSWER ' + json.dumps(value), flush=True)\n"
            f"ray.init(address={self.address!r}, log_to_driver=False)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", script + code],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        answers = [x for x in proc.stdout.splitlines() if x.startswith("ANSWER ")]
        return json.loads(answers[-1].removeprefix("ANSWER "))

    def node_ids(self) -> dict[str, list[str]]:
        """The ids of the nodes the cluster counts alive, by the resource that names them."""
        names = sorted(self.nodes)
        ids = self.python(
            "answer([[r, n['NodeID']] for n in ray.nodes() if n['Alive'] "
            f"for r in n['Resources'] if r in {names!r}])"
        )
        by_name: dict[str, list[str]] = {}
        for name, node_id in ids:
            by_name.setdefault(name, []).append(node_id)
        return by_name

    def alive_nodes(self) -> dict[str, str]:
        """The node id of each alive node, by the resource that names it."""
        ids = self.node_ids()
        assert all(len(v) == 1 for v in ids.values()), f"two alive nodes of one name: {ids}"
        return {name: v[0] for name, v in ids.items()}

    def kill(self, name: str) -> None:
        """Kill a node at once (SIGKILL to its raylet, its workers and its ``ray start``)."""
        node = self.nodes[name]
        node.signal(signal.SIGKILL)
        node.process.wait(timeout=60)

    def stop(self) -> None:
        """End every node started here: the workers first, then the head; SIGTERM, then
        SIGKILL to whatever of their sessions is left."""
        for node in reversed(list(self.nodes.values())):
            node.signal(signal.SIGTERM)
        end = time.monotonic() + 2
        for node in reversed(list(self.nodes.values())):
            try:
                node.process.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            node.signal(signal.SIGKILL)  # the session's stragglers (gcs_server, workers)
            if node.process.poll() is None:
                node.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)
