"""The compact (int8) copy that certified scans read first: its kernels against NumPy and its
similarity cap against the engine's exact similarity, on every compiled kernel variant.
Internal: the kernels are called directly, and the engine's compact copy is read from its
compiled store (tests/_internal.py)."""
import numpy as np
import pytest

import chrono_engine as ce
from _internal import core as core_of
from chrono_engine import _core

VARIANTS = ce.build_info()["simd_available"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("d", [1, 15, 16, 37, 384])
def test_int8_dots_match_numpy(variant, d):
    rng = np.random.default_rng(d)
    c = rng.integers(-127, 128, d).astype(np.int8)
    Q = rng.standard_normal((9, d)).astype(np.float32)
    want = Q.astype(np.float64) @ c.astype(np.float64)
    # queries transposed, padded to 8s: every padded width, rows in passes of 4 or 2 and the rest
    for G, R in ((1, 1), (8, 3), (9, 4), (16, 5), (17, 7), (24, 6), (31, 7), (40, 3), (48, 2), (56, 9), (64, 9)):
        QG = rng.standard_normal((G, d)).astype(np.float32)
        C = rng.integers(-127, 128, (R, d)).astype(np.int8)
        np.testing.assert_allclose(_core.dot_qt_i8(C, QG, variant), C.astype(np.float64) @ QG.T.astype(np.float64),
                                   rtol=1e-5, atol=1e-4 * np.sqrt(d))
    # one query at a time (converting the row as it goes), then subsets (converting it once)
    one = np.array([_core.dot_i8_some(c, Q, np.array([g], np.uint32), variant)[0] for g in range(9)])
    np.testing.assert_allclose(one, want, rtol=1e-5, atol=1e-4 * np.sqrt(d))
    for which in ([], [4], [8, 0, 3], list(range(9))):  # a subset of the queries
        some = _core.dot_i8_some(c, Q, np.array(which, np.uint32), variant)
        np.testing.assert_allclose(some, want[which], rtol=1e-5, atol=1e-4 * np.sqrt(d))
    with pytest.raises(ValueError):
        _core.dot_i8_some(c[:-1] if d > 1 else np.zeros(2, np.int8), Q, np.array([0], np.uint32), variant)


@pytest.mark.parametrize("metric", ["cosine", "ip"])
def test_compact_cap_bounds_the_exact_similarity(metric):
    """codes = round(x / s) with s = max|x| / 127; err >= |x - s c|; and for random queries
    s <q, c> + |q| err is never below the similarity the engine computes."""
    rng = np.random.default_rng(7)
    n, d = 400, 48
    x = rng.standard_normal((n, d)).astype(np.float32)
    if metric == "ip":
        x *= rng.uniform(0.01, 30.0, (n, 1)).astype(np.float32)  # very different norms
    eng = ce.Engine(d, metric=metric)
    eng.ingest({"vector": x, "valid_from": np.zeros(n, "datetime64[us]")})
    rows = np.arange(n, dtype=np.uint32)
    codes, scale, err = core_of(eng).compact(rows)
    stored = core_of(eng).vectors(rows).astype(np.float64)
    s_ref = np.abs(stored).max(1) / 127.0
    np.testing.assert_allclose(scale, s_ref, rtol=1e-6)
    want = np.clip(np.rint(stored / scale[:, None].astype(np.float64)), -127, 127)
    np.testing.assert_array_equal(codes, want)
    resid = np.linalg.norm(stored - scale[:, None].astype(np.float64) * codes, axis=1)
    assert (err.astype(np.float64) >= resid).all()
    Q = rng.standard_normal((30, d)).astype(np.float32)
    for q in Q:
        exact = np.array([_core.dot(q, stored[i].astype(np.float32)) for i in range(n)])
        cap = np.array([float(scale[i]) * _core.dot_i8_some(codes[i], q[None], np.zeros(1, np.uint32))[0]
                        for i in range(n)])
        cap = cap + np.linalg.norm(q.astype(np.float64)) * err
        assert (cap >= exact).all()
        assert (cap - exact).max() < 0.05 * np.linalg.norm(q) * np.linalg.norm(stored, axis=1).max()


def test_group_dot_kernels_reject_bad_shapes():
    """The test bindings of dot_qt_i8 / dot_i8_some name what is wrong."""
    c = np.zeros(8, np.int8)
    Q = np.zeros((3, 8), np.float32)
    with pytest.raises(ValueError, match="C must be"):
        _core.dot_qt_i8(c.reshape(1, 8), np.zeros((3, 7), np.float32))
    with pytest.raises(ValueError, match="G must be"):
        _core.dot_qt_i8(c.reshape(1, 8), np.zeros((65, 8), np.float32))
    with pytest.raises(ValueError, match="Q must be"):
        _core.dot_i8_some(c, np.zeros((3, 7), np.float32), np.array([0], np.uint32))
    with pytest.raises(IndexError, match="which: query out of range"):
        _core.dot_i8_some(c, Q, np.array([3], np.uint32))


VNNI = [v for v in VARIANTS if "vnni" in v]


@pytest.mark.skipif(not VNNI, reason="no AVX512-VNNI on this CPU (no x86-64-v4-vnni variant)")
@pytest.mark.parametrize("d", [1, 3, 4, 7, 64, 383, 384])
@pytest.mark.parametrize("G", [1, 8, 13, 16, 37, 64])
@pytest.mark.parametrize("R", [1, 4, 6])
def test_int8_group_dot_vnni_is_exact(d, G, R):
    """dot_qt_s8 (vpdpbusd of the queries as unsigned q8 + 128 with the signed row codes,
    minus 128 * the row's code sum) equals the int64 NumPy product, extreme codes (-128,
    127) and partial 4-byte blocks included."""
    rng = np.random.default_rng(1000 * d + 10 * G + R)
    C = rng.integers(-128, 128, (R, d)).astype(np.int8)
    Q8 = rng.integers(-127, 128, (G, d)).astype(np.int8)
    C[0, :] = -128
    Q8[0, :] = 127
    want = C.astype(np.int64) @ Q8.T.astype(np.int64)
    got = _core.dot_qt_s8(C, Q8, VNNI[0])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def _has_dot_s8_1(variant: str) -> bool:
    try:
        _core.dot_s8_1(np.zeros((1, 8), np.int8), np.zeros(8, np.int8), variant)
    except ValueError as e:
        assert "no dot_s8_1" in str(e)
        return False
    return True


#: the variants with a lone query's exact int8 dot (dot_s8_1): every one compiled for AVX2
S8_1 = [v for v in VARIANTS if _has_dot_s8_1(v)]


def test_every_avx2_variant_has_the_lone_int8_dot():
    """The x86-64-v3 variant (AVX2) and every AVX-512 one carry dot_s8_1, so a lone query's
    own scan (scan_one.hpp) runs on AVX2 machines too; the x86-64-v2 baseline has none (the
    group scans serve a lone query there)."""
    if not VARIANTS[0].startswith("x86-64"):
        pytest.skip("not an x86-64 build")
    assert S8_1 == [v for v in VARIANTS if v.startswith(("x86-64-v3", "x86-64-v4"))]
    if ce.build_info()["baseline"] == "x86-64-v2" and ce.build_info()["simd"] != "x86-64-v2":
        assert "x86-64-v3" in S8_1  # this CPU has AVX2: the dispatched v3 variant is here


@pytest.mark.skipif(not S8_1, reason="no AVX2 kernel variant in this build")
@pytest.mark.parametrize("variant", S8_1)
@pytest.mark.parametrize("d", [1, 3, 31, 32, 33, 63, 64, 65, 127, 383, 384, 1000])
@pytest.mark.parametrize("R", [1, 2, 3, 5])
def test_int8_single_query_dot_is_exact(variant, d, R):
    """dot_s8_1 (a lone query's kernel; VNNI: the row codes flipped to unsigned, c + 128,
    times the signed query codes, minus 128 * the query's code sum; AVX2: |c| times q8 sign(c)
    in saturating int16 pairs, which the codes' range keeps from saturating) equals the int64
    NumPy product, and the group kernel where there is one, with extreme codes (rows of -128
    and 127 against a query of 127 and -127, the pairs' largest sums) and partial blocks (the
    rows lie back to back, so a read past d would take the next row's codes)."""
    rng = np.random.default_rng(100 * d + R)
    C = rng.integers(-128, 128, (R, d)).astype(np.int8)
    q8 = rng.integers(-127, 128, d).astype(np.int8)
    C[0, :] = -128
    if R > 1:
        C[1, :] = 127
    q8[: d // 2] = 127
    q8[d // 2:: 3] = -127
    want = C.astype(np.int64) @ q8.astype(np.int64)
    got = _core.dot_s8_1(C, q8, variant)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    if "vnni" in variant:
        np.testing.assert_array_equal(got, _core.dot_qt_s8(C, q8[None, :], variant)[:, 0])


def test_int8_group_dot_vnni_refuses_variants_without_it():
    C = np.zeros((1, 8), np.int8)
    for v in VARIANTS:
        if "vnni" not in v:
            with pytest.raises(ValueError, match="no dot_qt_s8"):
                _core.dot_qt_s8(C, C, v)
        if v not in S8_1:
            with pytest.raises(ValueError, match="no dot_s8_1"):
                _core.dot_s8_1(C, C[0], v)
    with pytest.raises(ValueError, match="G must be"):
        _core.dot_qt_s8(C, np.zeros((65, 8), np.int8))
    with pytest.raises(ValueError, match="C must be"):
        _core.dot_qt_s8(C, np.zeros((2, 7), np.int8))
    for v in S8_1:
        for q in (np.zeros(7, np.int8), np.zeros((1, 8), np.int8), np.full(8, -128, np.int8)):
            with pytest.raises(ValueError, match="q8"):
                _core.dot_s8_1(C, q, v)


def test_query_quantisation_matches_numpy():
    """The planner's int8 query quantisation (quantise_queries): scale max|q| / 127, codes
    round(q / scale), and a residual norm no smaller than NumPy's (a zero query: codes 0)."""
    rng = np.random.default_rng(7)
    Q = rng.standard_normal((9, 37)).astype(np.float32)
    Q[3] = 0.0
    Q[5] *= 1e-30
    q8, sq, rn = _core.quantise_queries(Q)
    Qd = Q.astype(np.float64)
    want_sq = np.abs(Qd).max(axis=1) / 127.0
    np.testing.assert_array_equal(sq, want_sq)
    safe = np.where(want_sq > 0, want_sq, 1.0)[:, None]
    want_q8 = np.where(want_sq[:, None] > 0, np.clip(np.rint(Qd / safe), -127, 127), 0).astype(np.int8)
    np.testing.assert_array_equal(q8, want_q8)
    resid = np.linalg.norm(Qd - want_sq[:, None] * want_q8, axis=1)
    assert (rn >= resid).all()
    np.testing.assert_allclose(rn, resid, rtol=1e-8, atol=1e-299)
    assert (q8[3] == 0).all() and sq[3] == 0.0
    with pytest.raises(ValueError, match="Q must be"):
        _core.quantise_queries(np.zeros(5, np.float32))
