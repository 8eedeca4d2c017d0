"""Layer 3 chain verification: kernels vs NumPy reference, chronofy parity, monitor, errors."""
from __future__ import annotations

import threading
from datetime import datetime

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("numba")  # the `verify` extra

from chrono_engine.errors import QueryError  # noqa: E402
from chrono_engine.verify import (REPORT_SCHEMA, ChainBatch, ValidityMonitor,  # noqa: E402
                                  _parallel, verify_chains, verify_chains_reference,
                                  verify_hits)
from chrono_engine.verify.chains import report_table, verify_arrays  # noqa: E402

# ----------------------------------------------------------------------- helpers


@pytest.fixture(params=["serial", "parallel"])
def kernel_path(request, monkeypatch):
    """Run a test through the serial kernels and through their parallel wrappers."""
    if request.param == "parallel":
        monkeypatch.setattr(_parallel, "PARALLEL_MIN_WORK", 0)
    return request.param


def random_batch(rng, n_chains=40, max_steps=6, max_facts=5, n_valid=25):
    """Random ragged chains (empty chains and steps included) and a validity array."""
    step_lens = rng.integers(0, max_steps + 1, n_chains)
    fact_lens = rng.integers(0, max_facts + 1, int(step_lens.sum()))
    ids = rng.integers(0, n_valid, int(fact_lens.sum()))
    co = np.concatenate([[0], np.cumsum(step_lens)])
    so = np.concatenate([[0], np.cumsum(fact_lens)])
    r = rng.random()
    if r < 0.4:  # coarse grid: ties between steps, facts and γ
        validity = np.round(rng.random(n_valid) * 8) / 8
    elif r < 0.7:  # equal in float32, apart in float64: a float32 shortcut would tie them
        validity = np.round(rng.random(n_valid) * 4) / 4 + rng.integers(0, 3, n_valid) * 1e-12
    else:
        validity = rng.random(n_valid)
    return co, so, ids, validity


def assert_same(got: dict, want: dict):
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        assert got[key].dtype.kind == want[key].dtype.kind, key


# ----------------------------------------------------------------------- kernel vs reference

def test_kernels_match_reference_exactly(kernel_path):
    rng = np.random.default_rng(0)
    for trial in range(300 if kernel_path == "serial" else 40):
        co, so, ids, v = random_batch(rng, n_chains=int(rng.integers(0, 50)))
        gamma = float(rng.choice([0.0, 0.25, 0.5, 0.875, 1.0, rng.random()]))
        if trial % 3 == 0:
            co, so, ids = co.astype(np.int32), so.astype(np.int32), ids.astype(np.int32)
        if trial % 4 == 0:
            v = v.astype(np.float32)
        got = verify_arrays(ChainBatch(co, so, ids), v, gamma)
        assert_same(got, verify_chains_reference(co, so, ids, v, gamma))


def test_unused_non_finite_validity_matches_reference(kernel_path):
    """A non-finite validity that no chain uses is not an error: results agree with the
    reference (the kernel checks each use, not the whole array)."""
    rng = np.random.default_rng(5)
    for trial in range(100 if kernel_path == "serial" else 20):
        co, so, ids, v = random_batch(rng, n_chains=int(rng.integers(0, 50)))
        gamma = float(rng.choice([0.0, 0.5, 1.0, rng.random()]))
        v = np.append(v, np.nan)  # fact len(v) - 1: used by no chain
        got = verify_arrays(ChainBatch(co, so, ids), v, gamma)
        assert_same(got, verify_chains_reference(co, so, ids, v, gamma))
    co, so = np.array([0, 3, 4]), np.array([0, 400, 900, 1000, 1200])
    ids = rng.integers(0, 150, 1200)
    v = np.append(np.round(rng.random(150) * 16) / 16, np.inf)
    assert_same(verify_arrays(ChainBatch(co, so, ids), v, 0.9),
                verify_chains_reference(co, so, ids, v, 0.9))


def test_long_chains_take_the_sorting_path(kernel_path):
    rng = np.random.default_rng(1)
    co = np.array([0, 3, 4])
    so = np.array([0, 400, 900, 1000, 1200])
    ids = rng.integers(0, 150, 1200)
    v = np.round(rng.random(150) * 16) / 16
    got = verify_arrays(ChainBatch(co, so, ids), v, 0.9)
    assert_same(got, verify_chains_reference(co, so, ids, v, 0.9))
    assert got["target_offsets"][-1] > 64
    # long chains between short ones (with repeated facts), both kernels
    co = np.array([0, 2, 5, 6, 8])
    so = np.array([0, 3, 5, 400, 900, 1000, 1004, 1010, 1012])
    ids = rng.integers(0, 40, 1012)
    for extra in ([], [np.nan]):
        v2 = np.append(v[:40], extra)
        assert_same(verify_arrays(ChainBatch(co, so, ids), v2, 0.6),
                    verify_chains_reference(co, so, ids, v2, 0.6))


def random_equal_width_batch(rng, width, n_chains=60, max_steps=12, n_valid=30):
    """Chains whose steps all use ``width`` facts (the specialised kernel's input)."""
    step_lens = rng.integers(0, max_steps + 1, n_chains)
    step_lens[0] = max(step_lens[0], 1)
    co = np.concatenate([[0], np.cumsum(step_lens)])
    so = np.arange(int(co[-1]) + 1) * width
    n_valid = min(n_valid, int(so[-1]))  # no longer than the uses: checked up front
    ids = rng.integers(0, n_valid, int(so[-1]))
    r = rng.random()
    if r < 0.4:  # coarse grid: ties between steps, facts and γ
        validity = np.round(rng.random(n_valid) * 8) / 8
    elif r < 0.7:  # equal in float32, apart in float64: a float32 shortcut would tie them
        validity = np.round(rng.random(n_valid) * 4) / 4 + rng.integers(0, 3, n_valid) * 1e-12
    else:
        validity = rng.random(n_valid)
    return co, so, ids, validity


def test_equal_width_kernel_matches_reference(kernel_path, monkeypatch):
    """Steps of one width run the kernel specialised for it (the ragged kernel is made to
    fail here to prove it); results equal the reference, ties and long chains included."""
    from chrono_engine.verify import chains_kernel

    def ragged(*args):
        raise AssertionError("the ragged kernel ran")

    monkeypatch.setattr(chains_kernel, "chain_range", ragged)
    monkeypatch.setattr(chains_kernel, "chain_pass", ragged)
    rng = np.random.default_rng(11)
    for trial in range(150 if kernel_path == "serial" else 30):
        width = int(rng.integers(1, 7))
        co, so, ids, v = random_equal_width_batch(rng, width, n_chains=int(rng.integers(1, 60)))
        gamma = float(rng.choice([0.0, 0.25, 0.5, 0.875, 1.0, rng.random()]))
        if trial % 3 == 0:
            co, so, ids = co.astype(np.int32), so.astype(np.int32), ids.astype(np.int32)
        if trial % 4 == 0:
            v = v.astype(np.float32)
        batch = ChainBatch(co, so, ids)
        assert batch.facts_per_step == width
        got = verify_arrays(batch, v, gamma)
        assert_same(got, verify_chains_reference(co, so, ids, v, gamma))
    # a long chain (more than SMALL uses below γ) among short ones
    co = np.array([0, 2, 150, 151])
    so = np.arange(152) * 3
    ids = rng.integers(0, 40, 453)
    v = np.round(rng.random(40) * 16) / 16
    got = verify_arrays(ChainBatch(co, so, ids), v, 0.9)
    assert_same(got, verify_chains_reference(co, so, ids, v, 0.9))
    assert (v[ids[6:450]] < 0.9).sum() > 32  # chain 1 did take the sorting path


def test_kernel_choice_by_width_and_finiteness():
    """The specialised kernel needs equal widths of 1 .. MAX_UNIFORM_WIDTH and a validity
    array it can check cheaply (no longer than the fact uses) that is all finite; the other
    batches take the ragged kernel, and both agree with the reference."""
    from chrono_engine.verify.chains import MAX_UNIFORM_WIDTH, _uniform_ok

    v = np.linspace(0.1, 1.0, 10)
    assert _uniform_ok(3, 30, v)
    assert not _uniform_ok(None, 30, v)
    assert not _uniform_ok(0, 30, v)
    assert not _uniform_ok(MAX_UNIFORM_WIDTH + 1, 300, v)
    assert not _uniform_ok(3, 9, v)  # pool larger than the uses: not scanned
    assert not _uniform_ok(3, 30, np.append(v[:-1], np.nan))
    assert ChainBatch.from_lists([[[0, 1], [2]]]).facts_per_step is None
    assert ChainBatch.from_lists([[[0, 1], [2, 3]], []]).facts_per_step == 2
    assert ChainBatch.from_lists([]).facts_per_step is None
    rng = np.random.default_rng(3)
    for width in (MAX_UNIFORM_WIDTH, MAX_UNIFORM_WIDTH + 1):
        co, so, ids, v = random_equal_width_batch(rng, width, n_valid=5)
        v[0] = np.nan if width > MAX_UNIFORM_WIDTH else v[0]
        ids = np.where(ids == 0, 1, ids)  # the NaN is never used
        assert_same(verify_arrays(ChainBatch(co, so, ids), v, 0.5),
                    verify_chains_reference(co, so, ids, v, 0.5))


def test_report_semantics():
    v = np.array([0.9, 0.4, 0.7, 0.4, 0.2])
    t = verify_chains([[[0, 1], [2]], [[0], [], [2, 4, 3, 1, 4]], [], [[]], [[0], [2]]], v, 0.5)
    assert t.schema.names == REPORT_SCHEMA.names
    assert t.schema.metadata[b"gamma"] == b"0.5"
    rows = t.to_pylist()
    assert rows[0] == dict(robustness=0.4 - 0.5, satisfied=False, bound=0.4, weakest_step=0,
                           weakest_fact=1, trigger=True, targets=[1], step_validity=[0.4, 0.7])
    # duplicates once, least valid first, ties in reading order (3 before 1)
    assert rows[1]["targets"] == [4, 3, 1] and rows[1]["weakest_step"] == 2
    assert rows[1]["step_validity"] == [0.9, 1.0, 0.2]
    # empty chain and a chain of empty steps: chronofy's conventions
    assert rows[2] == dict(robustness=0.0, satisfied=True, bound=1.0, weakest_step=None,
                           weakest_fact=None, trigger=False, targets=[], step_validity=[])
    assert rows[3] == dict(robustness=0.5, satisfied=True, bound=1.0, weakest_step=0,
                           weakest_fact=None, trigger=False, targets=[], step_validity=[1.0])
    assert rows[4]["satisfied"] and rows[4]["targets"] == [] and rows[4]["weakest_fact"] == 2


def test_theorem_1_and_trigger_invariants():
    rng = np.random.default_rng(2)
    co, so, ids, v = random_batch(rng, n_chains=500)
    t = verify_chains((co, so, ids), v, 0.4).to_pydict()
    for rho, bound, trig, targets, sv in zip(t["robustness"], t["bound"], t["trigger"],
                                             t["targets"], t["step_validity"], strict=True):
        if sv:
            assert rho == min(sv) - 0.4
            assert bound <= min(sv)  # C_out ≤ min V ≤ every step's validity
        assert trig == (rho < 0) == bool(targets)
        assert all(v[f] < 0.4 for f in targets)
        assert [v[f] for f in targets] == sorted(v[f] for f in targets)


def test_input_forms_agree():
    rng = np.random.default_rng(3)
    co, so, ids, v = random_batch(rng, n_chains=30)
    batch = ChainBatch(co, so, ids)
    lists = batch.to_lists()
    want = verify_chains(batch, v, 0.5)
    assert verify_chains(lists, v, 0.5).equals(want)
    assert verify_chains((co, so, ids), v, 0.5).equals(want)
    assert verify_chains((x for x in lists), v, 0.5).equals(want)
    arrow = pa.array(lists, type=pa.list_(pa.list_(pa.int64())))
    assert verify_chains(arrow, v, 0.5).equals(want)
    assert verify_chains(pa.chunked_array([arrow[:10], arrow[10:]]), v, 0.5).equals(want)
    # a sliced Arrow array starts its offsets past zero
    assert verify_chains(arrow[7:19], v, 0.5).equals(verify_chains(lists[7:19], v, 0.5))
    assert verify_chains(batch, pa.array(v), 0.5).equals(want)
    assert verify_chains(batch, list(v), 0.5).equals(want)


def test_dense_chains_share_their_ids():
    rng = np.random.default_rng(8)
    dense = rng.integers(0, 20, (50, 4, 3)).astype(np.int32)
    v = rng.random(20)
    assert verify_chains(dense, v, 0.5).equals(verify_chains(dense.tolist(), v, 0.5))
    assert np.shares_memory(ChainBatch.from_dense(dense).fact_ids, dense)
    with pytest.raises(QueryError, match="chains, steps, facts"):
        ChainBatch.from_dense(np.zeros((2, 2), np.int64))



def test_list_dense_and_csr_forms_agree_with_the_reference():
    """The three documented forms of the same chains — Python lists, the
    dense (chains, steps, facts) array and the CSR arrays — give one table, the NumPy
    reference's (ρ, the weakest link, the targets), for every index dtype; ragged lists
    too."""
    rng = np.random.default_rng(25)
    for shape, dtype in (((300, 4, 3), np.int64), ((50, 7, 1), np.int32), ((20, 1, 16), np.uint16)):
        dense = rng.integers(0, 40, shape).astype(dtype)
        v = np.round(rng.random(40) * 8) / 8  # ties between facts, steps and γ
        b = ChainBatch.from_dense(dense)
        co, so, ids = b.chain_offsets, b.step_offsets, b.fact_ids.astype(np.int64)
        for gamma in (0.0, 0.375, 0.5, 1.0):
            want = report_table(verify_chains_reference(co, so, ids, v, gamma), co, gamma)
            assert verify_chains((co, so, ids), v, gamma).equals(want)
            assert verify_chains(dense, v, gamma).equals(want)
            assert verify_chains(dense.tolist(), v, gamma).equals(want)
        assert ChainBatch.from_lists(dense.tolist()).to_lists() == dense.tolist()
    # ragged lists, and the edge shapes of each form
    co, so, ids, v = random_batch(rng, n_chains=60)
    ragged = ChainBatch(co, so, ids).to_lists()
    want = report_table(verify_chains_reference(co, so, ids, v, 0.5), co, 0.5)
    assert verify_chains(ragged, v, 0.5).equals(want)
    assert verify_chains([[[0, 1]], [[1, 0]]], v, 0.5).equals(verify_chains(np.array([[[0, 1]], [[1, 0]]]), v, 0.5))
    assert verify_chains([[[]], [[]]], v, 0.5).equals(verify_chains(np.zeros((2, 1, 0), np.int64), v, 0.5))
    assert verify_chains([[], []], v, 0.5).equals(verify_chains(np.zeros((2, 0, 3), np.int64), v, 0.5))
    with pytest.raises(QueryError, match="chain 0, step 0 holds True"):
        verify_chains([[[True]], [[False]]], v, 0.5)
    with pytest.raises(QueryError, match="chain 1, step 0 holds 0.5"):
        verify_chains([[[0]], [[0.5]]], v, 0.5)

def test_csr_is_used_without_copies():
    co = np.array([0, 2, 3], np.int32)
    so = np.array([0, 1, 3, 4], np.int32)
    ids = np.array([0, 1, 2, 1], np.int32)
    b = ChainBatch(co, so, ids)
    assert b.chain_offsets is co and b.step_offsets is so and b.fact_ids is ids
    arrays = verify_arrays(b, np.array([0.5, 0.25, 0.75]), 0.3)
    table = report_table(arrays, b.chain_offsets, 0.3)
    sv = table.column("step_validity").chunk(0)
    assert sv.values.buffers()[1].address == arrays["step_validity"].ctypes.data
    tg = table.column("targets").chunk(0)
    assert tg.values.buffers()[1].address == arrays["targets"].ctypes.data


def test_threads_hammer_verify_chains(kernel_path):
    rng = np.random.default_rng(4)
    co, so, ids, v = random_batch(rng, n_chains=5000)
    want = verify_chains((co, so, ids), v, 0.5)
    results, errors = [], []

    def work():
        try:
            for _ in range(10):
                results.append(verify_chains((co, so, ids), v, 0.5))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 40
    assert all(r.equals(want) for r in results)


# ----------------------------------------------------------------------- chronofy parity

def test_matches_chronofy_stl_verifier():
    chronofy = pytest.importorskip("chronofy")
    from chronofy.decay.base import DecayFunction

    class Lookup(DecayFunction):  # V(e, T) given per fact, so both sides see the same numbers
        def __init__(self, values):
            self.values = values

        def compute(self, fact, query_time):
            return float(self.values[fact.metadata["id"]])

        def compute_batch(self, facts, query_time):
            return [self.compute(f, query_time) for f in facts]

    rng = np.random.default_rng(5)
    now = datetime(2025, 1, 1)
    for _ in range(20):
        co, so, ids, v = random_batch(rng, n_chains=30)
        gamma = float(rng.choice([0.0, 0.5, 1.0, rng.random()]))
        verifier = chronofy.STLVerifier(decay_fn=Lookup(v), threshold=gamma)
        table = verify_chains((co, so, ids), v, gamma).to_pylist()
        facts = [chronofy.TemporalFact(content=f"f{i}", timestamp=now, metadata={"id": i})
                 for i in range(len(v))]
        for c, row in enumerate(table):
            steps = [chronofy.ReasoningStep(step_index=s - co[c], content="",
                                            facts_used=[facts[f] for f in ids[so[s]:so[s + 1]]])
                     for s in range(co[c], co[c + 1])]
            ref = verifier.verify(chronofy.ReasoningTrace(steps=steps, query_time=now))
            assert row["robustness"] == ref.robustness
            assert row["satisfied"] == ref.satisfied
            assert row["step_validity"] == ref.step_validity
            assert row["weakest_step"] == ref.weakest_step_index
            assert row["bound"] == ref.output_confidence_bound
            want_fact = None if ref.weakest_fact is None else ref.weakest_fact.metadata["id"]
            assert row["weakest_fact"] == want_fact


# ----------------------------------------------------------------------- verify_hits

def test_verify_hits_groups_queries_and_names_ids():
    v = np.array([0.9, 0.2, 0.6, 0.2, 0.1, 0.8])
    ids = np.array([70, 80, 90, 80, 10, 11], np.uint64)
    q = np.array([0, 0, 0, 0, 2, 2])
    t = verify_hits(v, ids, 0.5, query=q, n_queries=4)
    assert t.column_names[0] == "query" and t.num_rows == 4
    rows = t.to_pylist()
    assert rows[0]["targets"] == [80] and rows[0]["weakest_fact"] == 80  # retrieved twice
    assert rows[1]["robustness"] == 0.0 and rows[1]["satisfied"]  # no hits: empty chain
    assert rows[2]["targets"] == [10] and rows[2]["bound"] == 0.1
    assert rows[3]["weakest_fact"] is None
    single = verify_hits(v[:3], ids[:3], 0.5)
    assert single.num_rows == 1 and single.column("targets").to_pylist() == [[80]]
    with pytest.raises(QueryError, match="non-decreasing"):
        verify_hits(v, ids, 0.5, query=q[::-1])
    with pytest.raises(QueryError, match="hit 1"):
        verify_hits(np.array([0.5, np.nan]), ids[:2], 0.5)
    with pytest.raises(QueryError, match="n_queries"):
        verify_hits(v, ids, 0.5, query=q, n_queries=2)


# ----------------------------------------------------------------------- monitor

def test_monitor_agrees_with_batch_on_every_prefix():
    rng = np.random.default_rng(6)
    co, so, ids, v = random_batch(rng, n_chains=1, max_steps=12)
    steps = ChainBatch(co, so, ids).to_lists()[0]
    m = ValidityMonitor(0.5, lag=1, validity=v)
    for k, step in enumerate(steps):
        ev = m.observe(step)
        row = verify_chains([steps[:k + 1]], v, 0.5).to_pylist()[0]
        assert ev.robustness == row["robustness"] == m.robustness
        assert m.bound == row["bound"] and m.weakest_step == row["weakest_step"]
        assert m.weakest_fact == row["weakest_fact"] and ev.step == k
        assert m.step_validity == row["step_validity"]


def test_monitor_lag_is_hysteresis():
    v = np.array([0.9, 0.2, 0.3, 0.1, 0.8])
    trace = [[0], [1], [0], [1], [2], [3, 2], [4], [3]]
    def run(lag):
        m = ValidityMonitor(0.5, lag=lag, validity=v)
        return m, [m.observe(s) for s in trace]

    m1, ev1 = run(1)  # eager: every violating run fires at its first step
    assert [e.fired for e in ev1] == [False, True, False, True, False, False, False, True]
    m3, ev3 = run(3)  # three violating steps in a row (steps 3, 4, 5) before it fires
    assert [e.fired for e in ev3] == [False, False, False, False, False, True, False, False]
    assert ev3[5].targets == (3, 1, 2) and ev3[5].run_length == 3
    assert ev3[6].triggered is False and ev3[6].targets == ()  # a fresh step re-arms
    assert m3.fired_count == 1 and m1.fired_count == 3
    assert m3.robustness == m1.robustness == 0.1 - 0.5
    m3.reset()
    assert m3.steps == 0 and m3.robustness == 0.0 and m3.bound == 1.0


def test_monitor_values_without_ids():
    m = ValidityMonitor(0.5, lag=2)
    m.observe(values=[0.9, 0.4])
    ev = m.observe(values=[0.3])
    assert ev.fired and ev.targets == (2, 1)  # running fact numbers
    ev = m.observe(facts=[7, 8], values=[0.1, 0.45])
    assert ev.triggered and not ev.fired and ev.targets == (7, 2, 1, 8)


def test_monitor_errors():
    with pytest.raises(QueryError, match="lag"):
        ValidityMonitor(0.5, lag=0)
    with pytest.raises(QueryError, match="lag"):
        ValidityMonitor(0.5, lag=1.5)
    with pytest.raises(QueryError, match="gamma"):
        ValidityMonitor(1.2)
    m = ValidityMonitor(0.5, validity=np.array([0.5, 0.6]))
    with pytest.raises(QueryError, match="fact id 2 is out of range"):
        m.observe([0, 2])
    with pytest.raises(QueryError, match="nan"):
        m.observe([0], values=[np.nan])
    with pytest.raises(QueryError, match="no validity array"):
        ValidityMonitor(0.5).observe([1])
    assert m.steps == 0  # rejected steps leave no trace


# ----------------------------------------------------------------------- bad input

@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan"), float("inf"), True, "0.5", None])
def test_gamma_outside_unit_interval(gamma):
    with pytest.raises(QueryError, match="gamma"):
        verify_chains([[[0]]], np.array([0.5]), gamma)


def test_non_finite_validity_names_chain_and_step():
    v = np.array([0.5, np.nan, np.inf])
    with pytest.raises(QueryError, match=r"chain 1, step 2: validity\[1\] is nan"):
        verify_chains([[[0]], [[0], [], [0, 1]]], v, 0.5)
    with pytest.raises(QueryError, match=r"validity\[2\] is inf"):
        verify_chains([[[2]]], v, 0.5)
    verify_chains([[[0]]], v, 0.5)  # facts that no chain uses are not checked
    with pytest.raises(QueryError, match=r"validity\[1\] is null"):
        verify_chains([[[0]]], pa.array([0.5, None]), 0.5)


@pytest.mark.parametrize("fid", [3, -1, 10**6])
def test_fact_ids_out_of_range(fid):
    with pytest.raises(QueryError, match=f"chain 1, step 0: fact id {fid} is out of range"):
        verify_chains([[[0]], [[1, fid]]], np.array([0.5, 0.6, 0.7]), 0.5)
    # equal-width steps (the specialised kernel): same message, first offending use
    with pytest.raises(QueryError, match=f"chain 2, step 1: fact id {fid} is out of range"):
        verify_chains([[[0, 1]], [[1, 2]], [[0, 0], [1, fid], [fid, 0]]],
                      np.array([0.5, 0.6, 0.7]), 0.5)
    ids = np.zeros((1000, 10, 3), np.int32)
    ids[700, 4, 2] = fid
    with pytest.raises(QueryError, match=f"chain 700, step 4: fact id {fid} is out of range"):
        verify_chains(ids, np.array([0.5, 0.6, 0.7]), 0.5)


@pytest.mark.parametrize("co, so, ids, words", [
    ([1, 2], [0, 1, 2], [0, 1], r"chain_offsets\[0\] is 1"),
    ([0, 2, 1], [0, 1, 2], [0, 1], r"chain_offsets\[2\] = 1 is below"),
    ([0, 1], [0, 1, 2], [0, 1], "there are 2 steps"),
    ([0, 2], [0, 1, 3], [0, 1], "there are 2 fact ids"),
    ([0, 2], [0, 2, 1], [0, 1], "non-decreasing"),
    ([], [0], [], "chain_offsets is empty"),
    ([0, 1], [0, 1], [0.5], "fact_ids must hold integers"),
    ([0, 1], [[0, 1]], [0], "step_offsets must be 1-D"),
    ([0, 1], [0, 1], [True], "integers"),
])
def test_malformed_csr(co, so, ids, words):
    with pytest.raises(QueryError, match=words):
        verify_chains((np.array(co), np.array(so), np.array(ids)), np.array([0.5, 0.6]), 0.5)


def test_malformed_lists_and_arrow():
    v = np.array([0.5, 0.6])
    with pytest.raises(QueryError, match="chain 1, step 0 is 3"):
        verify_chains([[[0]], [3]], v, 0.5)
    with pytest.raises(QueryError, match="chain 0 is 1"):
        verify_chains([1], v, 0.5)
    with pytest.raises(QueryError, match="chain 1, step 1 holds 0.5"):
        verify_chains([[[0]], [[1], [0, 0.5]]], v, 0.5)
    with pytest.raises(QueryError, match="chain 1 is null"):
        verify_chains(pa.array([[[0]], None]), v, 0.5)
    with pytest.raises(QueryError, match="list<list<integer>>"):
        verify_chains(pa.array([[0.5]]), v, 0.5)
    with pytest.raises(QueryError, match="chains must be"):
        verify_chains(3, v, 0.5)
    with pytest.raises(QueryError, match="1-D"):
        verify_chains([[[0]]], np.ones((2, 2)), 0.5)
