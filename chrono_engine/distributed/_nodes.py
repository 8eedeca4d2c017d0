"""A Ray cluster of several nodes on one machine, for tests and benchmarks of the sharded
engine's replicas (docs/distributed.md, "Trying it on one machine"): a head and worker nodes,
each its own ``ray start --block`` process group (raylet, object store, workers) with its own
CPUs and object store, joined over loopback; a node is killed as a machine dies (SIGKILL to its
whole process group).

Ray's servers listen on every interface of the machine, so :func:`private_network` runs a
command in a network namespace of its own (``unshare --net``) whose only interface is
loopback: nothing outside can reach the cluster, nor the cluster anything outside. The
cluster's processes share one random authentication token (Ray's token mode).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["LocalNodes", "private_network", "isolated"]


def isolated() -> bool:
    """Whether this process's only network interface is loopback."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def private_network(argv: list[str], *, timeout: float | None = None, env: dict | None = None,
                    cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` in a new network namespace whose only interface is loopback (brought
    up), capturing its output. OSError (with the reason) where this machine cannot make one
    (``unshare`` missing, or not permitted: it needs root or user namespaces)."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        raise OSError("unshare (util-linux) and ip (iproute2) are needed for a private network namespace")
    probe = subprocess.run([unshare, "--net", ip, "link", "set", "lo", "up"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise OSError(f"cannot make a network namespace here: {probe.stderr.strip()[:300]}")
    script = 'ip link set lo up && exec "$@"'
    return subprocess.run([unshare, "--net", "sh", "-c", script, "sh", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


class LocalNodes:
    """A head and ``workers`` worker nodes of ``cpus`` CPUs and ``object_store_mb`` MB of
    object store each, started with the ``ray`` command of this interpreter's environment.

    ``start()`` starts them (one after another: nodes starting together on one machine race
    for the same socket names) and connects this process as the driver; ``kill(i)`` kills
    node ``i`` (0 is the head) with SIGKILL to its process group; ``add_node()`` starts one
    more; ``stop()`` disconnects and stops them all and removes their session folder. Each
    node has a custom resource ``node-<i>`` (so work can be pinned to it). Ray's failure
    detection is shortened (a health check every ``health_ms`` ms, three misses) so that a
    killed node is declared dead in about a second and a half, not Ray's default 15 s or so.
    """

    def __init__(self, workers: int = 2, *, cpus: int = 2, object_store_mb: int = 100, health_ms: int = 500,
                 port: int | None = None) -> None:
        self.workers, self.cpus, self.store_mb, self.health_ms = workers, cpus, object_store_mb, health_ms
        self.port = port or _free_port()
        self.procs: list[subprocess.Popen | None] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="chrono-ray-"))
        self.env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=os.urandom(24).hex(),
                        RAY_DISABLE_USAGE_STATS="1", RAY_health_check_period_ms=str(health_ms),
                        RAY_health_check_timeout_ms=str(health_ms), RAY_health_check_failure_threshold="3",
                        RAY_health_check_initial_delay_ms=str(health_ms))
        self.ray_cmd = str(Path(sys.executable).with_name("ray"))
        if not Path(self.ray_cmd).exists():
            self.ray_cmd = shutil.which("ray") or "ray"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, i: int) -> subprocess.Popen:
        args = [self.ray_cmd, "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
                f"--num-cpus={self.cpus}", f"--object-store-memory={self.store_mb * 1_000_000}",
                f"--resources={json.dumps({f'node-{i}': 1})}"]
        if i == 0:
            args += ["--head", f"--port={self.port}", "--include-dashboard=false", f"--temp-dir={self.tmp}"]
        else:
            args += [f"--address={self.address}"]
        log = open(self.tmp / f"node-{i}.log", "wb")  # noqa: SIM115 - the process keeps it
        return subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout: float = 120.0) -> LocalNodes:
        """Start the head, connect, then each worker, waiting for each to join."""
        # the driver's token, before Ray reads its configuration (when it is first imported)
        os.environ.update({k: self.env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")})
        import ray
        if "ray._raylet" in sys.modules:  # imported before: read the configuration again
            from ray._raylet import Config
            Config.initialize("")
        self.procs.append(self._start(0))
        deadline = time.monotonic() + timeout
        while True:  # the head's GCS answers
            status = subprocess.run([self.ray_cmd, "status", f"--address={self.address}"], env=self.env,
                                    capture_output=True)
            if status.returncode == 0:
                break
            if self.procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Ray head did not start: {self.log(0)[-2000:]}")
            time.sleep(0.5)
        ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
        for _ in range(self.workers):
            self.add_node(timeout=max(1.0, deadline - time.monotonic()))
        return self

    def alive(self) -> int:
        import ray
        return sum(1 for n in ray.nodes() if n["Alive"])

    def add_node(self, timeout: float = 120.0) -> int:
        """Start one more worker node; returns its index once it has joined."""
        before = self.alive()
        i = len(self.procs)
        self.procs.append(self._start(i))
        deadline = time.monotonic() + timeout
        while self.alive() <= before:
            if self.procs[i].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Ray node {i} did not join: {self.log(i)[-2000:]}")
            time.sleep(0.25)
        return i

    def node_id(self, i: int) -> str | None:
        """Ray's node id of node ``i`` (None once it is dead)."""
        import ray
        for n in ray.nodes():
            if n["Alive"] and n["Resources"].get(f"node-{i}"):
                return n["NodeID"]
        return None

    def index_of(self, node_id: str) -> int | None:
        import ray
        for n in ray.nodes():
            if n["NodeID"] == node_id:
                for key in n["Resources"]:
                    if key.startswith("node-") and key[5:].isdigit():
                        return int(key[5:])
        return None

    def kill(self, i: int) -> None:
        """Node ``i`` dies as a machine does: SIGKILL, at once, to every process of it — the
        ``ray start`` process group (raylet, object store) and every descendant, Ray's worker
        processes too (they run in process groups of their own: killing the group alone
        would leave the node's actors running, and answering, until they noticed)."""
        p = self.procs[i]
        if p is None:
            return
        victims = _descendants(p.pid)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()
        self.procs[i] = None

    def log(self, i: int) -> str:
        try:
            return (self.tmp / f"node-{i}.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        import ray
        if ray.is_initialized():
            ray.shutdown()
        leftovers = [pid for p in self.procs if p is not None for pid in _descendants(p.pid)]
        for p in reversed(self.procs):
            if p is not None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 15
        for i, p in enumerate(self.procs):
            if p is None:
                continue
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:  # what `ray start` left behind in its group (the GCS, raylet, workers) goes too
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            self.procs[i] = None
        for pid in leftovers:  # workers in process groups of their own
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> LocalNodes:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
