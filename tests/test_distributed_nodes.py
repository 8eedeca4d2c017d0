"""The sharded engine's replicas on a real multi-node Ray cluster on this machine: a head and
two worker nodes, each started with ``ray start`` as its own process group with its own CPUs
and object store, in a network namespace whose only interface is loopback
(chrono_engine.distributed._nodes). benches/bench_failover.py runs once for the module, short: two
shards with two copies each spread over the nodes, a query load from several clients, a
worker node holding a primary killed with SIGKILL under it, a write after the kill, the
replacements; each test below checks one thing it saw."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the [ray] extra is not installed")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SCENARIO = Path(__file__).parents[1] / "benches" / "bench_failover.py"


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    from chrono_engine.distributed._nodes import private_network
    work = tmp_path_factory.mktemp("nodes")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        r = private_network([sys.executable, str(SCENARIO), "--work", str(work), "--clients", "4", "--seconds", "8",
                             "--n", "3000", "--dim", "16", "--inside"], timeout=600, env=env, cwd=str(work))
    except OSError as e:
        pytest.skip(f"a multi-node Ray cluster is run in a private network namespace: {e}")
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert r.returncode == 0 and lines, f"the scenario failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    return json.loads(lines[-1])


def test_node_cluster_is_three_ray_nodes_on_loopback_only(seen):
    assert seen["isolated"] and seen["nodes"] == 3


def test_replicas_spread_across_nodes(seen):
    assert seen["spread"] == [2, 2]  # each shard's two copies on two different nodes
    # once a node died its copies' bundles go where CPUs are free (SPREAD is best effort): the
    # copies may then share a node (docs/distributed.md); each shard has both again
    assert seen["copies_after"] == [2, 2]


def test_node_killed_under_load_fails_no_query(seen):
    assert seen["queries"] > 50
    assert seen["failed"] == 0, seen["failures"]


def test_node_killed_answers_stay_those_of_one_engine(seen):
    assert seen["wrong"] == 0
    assert all(seen["equal_after"]) and seen["len_equal"]


def test_node_killed_primary_hands_writing_to_a_replica(seen):
    assert any("a primary died" in e for e in seen["events"]), seen["events"]
    assert any("became the primary" in e or "a new primary serves" in e for e in seen["events"]), seen["events"]
    assert seen["write_ids_equal"]


def test_node_killed_replicas_replaced_from_the_store(seen):
    assert seen["nodes_after"] == 2
    assert seen["copies_after"] == [2, 2]
    assert any("a new replica serves" in e for e in seen["events"])
