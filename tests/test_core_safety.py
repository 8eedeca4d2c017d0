"""The compiled core against hostile input: metadata columns a store file hands to
``restore`` (failure 3: a single row with valid_to < valid_from segfaulted), a thread that
cannot start during a batch (failure 5: the process aborted), automatic ids past 2^64 - 1
(failure 6: they wrapped onto existing ids), and Store parameters hnswlib cannot take (M = 1, a
dim whose record size overflows). Cases that crashed the process run in a child process, so
that a crash fails the test instead of ending pytest.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import _core
from chrono_engine.errors import ChronoError, SchemaError
from storefiles import snap_dir

DIM, M, EFC, SEED = 8, 4, 32, 100
OPEN_END = np.iinfo(np.int64).max
U64_MAX = 2**64 - 1


def _policy():
    return ce.DecayPolicy({"news": ce.Exponential(half_life=7), "law": ce.Exponential(half_life=3650)},
                          default=None)


def _rows(n: int, seed: int, ids: np.ndarray | None = None) -> dict:
    rng = np.random.default_rng(seed)
    vf = np.datetime64("2020-01-01", "us") + rng.integers(0, 4 * 365, n).astype("timedelta64[D]")
    d = {"vector": rng.standard_normal((n, DIM)).astype(np.float32), "valid_from": vf,
         "valid_to": np.where(rng.random(n) < 0.5, np.datetime64("NaT", "us"), vf + np.timedelta64(400, "D")),
         "reliability": rng.uniform(0.5, 1.0, n).astype(np.float32),
         "fact_type": np.asarray(["news", "law"], dtype=object)[rng.integers(0, 2, n)],
         "stem_id": np.asarray([f"doc{i % 30}" for i in range(n)], dtype=object),
         "version": np.asarray([f"v{1 + i // 30}" for i in range(n)], dtype=object),
         "deprecated": rng.random(n) < 0.1}
    if ids is not None:
        d["id"] = ids
    return d


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(graph path, columns, decay table, stem count) of a 120-row store with stems, two
    fact types, retractions and ids from 1000."""
    eng = ce.Engine(DIM, decay=_policy(), M=M, ef_construction=EFC, threads=1)
    eng.ingest(_rows(120, 1, ids=np.arange(1000, 1120, dtype=np.uint64)))
    eng.retract([1003, 1010])
    store = tmp_path_factory.mktemp("core") / "s"
    eng.save(store)
    return snap_dir(store) / "graph.bin", eng.columns(), eng.decay.kernel_table(list(eng.fact_types)), len(eng.stems)


def _restore(store, path, cols, **kw):
    store.restore(str(path), cols["valid_from"], cols["valid_to"], cols["observed_at"], cols["ingested_at"],
                  cols["retracted_at"], cols["version"], cols["reliability"], cols["stem"], cols["fact_type"],
                  cols["deprecated"], cols["id"], **kw)
    return store


def _store(table):
    st = _core.Store(DIM, "cosine", M, EFC, SEED)
    st.set_decay(table)
    return st


def _set(column, row, value):
    def f(cols, n_stems):
        cols[column][row] = value(cols, n_stems) if callable(value) else value
    return f


BAD_COLUMNS = [
    ("valid_to before valid_from", _set("valid_to", 3, lambda c, _: c["valid_from"][3] - 1), "valid_to", 3,
     "valid_to <= valid_from"),
    ("valid_to equal to valid_from", _set("valid_to", 4, lambda c, _: c["valid_from"][4]), "valid_to", 4,
     "valid_to <= valid_from"),
    ("fact type without a decay profile", _set("fact_type", 5, 2), "fact_type", 5, "without a decay profile"),
    ("retracted before ingested", _set("retracted_at", 6, lambda c, _: c["ingested_at"][6] - 1), "retracted_at", 6,
     "retracted_at <= ingested_at"),
    ("retracted when ingested", _set("retracted_at", 7, lambda c, _: c["ingested_at"][7]), "retracted_at", 7,
     "retracted_at <= ingested_at"),
    ("reliability 0", _set("reliability", 8, 0.0), "reliability", 8, "outside (0, 1]"),
    ("reliability 7.5", _set("reliability", 9, 7.5), "reliability", 9, "outside (0, 1]"),
    ("reliability nan", _set("reliability", 10, np.nan), "reliability", 10, "outside (0, 1]"),
    ("stem -2", _set("stem", 11, -2), "stem", 11, "neither -1 (none) nor below"),
    ("stem past the stems", _set("stem", 12, lambda _, n: n), "stem", 12, "neither -1 (none) nor below"),
    ("stem 2^31 - 1 (would size an 8 GiB table)", _set("stem", 13, 2**31 - 1), "stem", 13, "below 120"),
    ("deprecated 2", _set("deprecated", 14, 2), "deprecated", 14, "not 0 or 1"),
    ("id twice", _set("id", 15, lambda c, _: c["id"][2]), "id", 15, "duplicate id 1002 (also row 2)"),
]


@pytest.mark.parametrize("name,damage,column,row,words", BAD_COLUMNS, ids=[c[0] for c in BAD_COLUMNS])
def test_restore_checks_every_column_first(saved, name, damage, column, row, words):
    path, cols, table, n_stems = saved
    bad = {k: v.copy() for k, v in cols.items()}
    damage(bad, n_stems)
    st = _store(table)
    kw = {"n_stems": n_stems} if column == "stem" and row == 12 else {}
    with pytest.raises(ValueError) as info:
        _restore(st, path, bad, **kw)
    msg = str(info.value)
    assert msg.startswith(f"column '{column}', row {row}: ") and words in msg, msg
    assert st.size == 0
    _restore(st, path, cols, n_stems=n_stems)  # the same store then takes the good columns
    assert st.size == len(cols["id"])
    for key, value in st.columns().items():
        np.testing.assert_array_equal(value, cols[key], err_msg=key)


def test_restore_fact_type_code_beyond_the_flag_bits(saved):
    path, cols, table, _ = saved
    bad = {k: v.copy() for k, v in cols.items()}
    bad["fact_type"][2] = 16384
    with pytest.raises(ValueError, match=r"^fact type code 16384 at row 2: a store holds at most 16,384"):
        _restore(_store(table), path, bad)


def test_restore_of_good_columns_with_n_stems(saved):
    path, cols, table, n_stems = saved
    assert _restore(_store(table), path, cols, n_stems=n_stems).size == len(cols["id"])


_REVERSED_INTERVAL = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import chrono_engine as ce
    from chrono_engine import _core
    eng = ce.Engine(4, threads=1)
    eng.ingest({"vector": np.ones((1, 4), np.float32), "valid_from": ["2024-01-01"]})
    eng.save(sys.argv[1])
    snap = json.loads(open(os.path.join(sys.argv[1], "CURRENT")).read())["snapshot"]
    cols = eng.columns()
    cols["valid_to"] = cols["valid_from"] - 1
    st = _core.Store(4, "cosine", 16, 200, 100)
    try:
        st.restore(os.path.join(sys.argv[1], snap, "graph.bin"), cols["valid_from"], cols["valid_to"], cols["observed_at"], cols["ingested_at"],
                   cols["retracted_at"], cols["version"], cols["reliability"], cols["stem"], cols["fact_type"],
                   cols["deprecated"], cols["id"])
        print("LOADED")
    except ValueError as e:
        print("REFUSED", e)
""")


@pytest.mark.slow
def test_single_reversed_interval_is_refused_not_a_crash(tmp_path):
    """The issue's case: one row with valid_to < valid_from segfaulted restore."""
    proc = subprocess.run([sys.executable, "-c", _REVERSED_INTERVAL, str(tmp_path / "s")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)  # cwd: not the source tree (no compiled core)
    assert proc.returncode == 0, f"rc {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.startswith("REFUSED column 'valid_to', row 0: valid_to <= valid_from"), proc.stdout


# ----------------------------------------------------------------------------- threads

_THREADS = textwrap.dedent("""
    import ctypes, resource
    import numpy as np
    from chrono_engine import _core
    # Keep freed heap (no trim), serve blocks up to 32 MiB from it, and grow it by 192 MiB
    # then free that: with MALLOC_ARENA_MAX=1 every later malloc (a new thread's TLS
    # included) reuses it, while the 8 MiB stack of a new thread needs fresh address space.
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallopt(-1, 1 << 30)   # M_TRIM_THRESHOLD
    libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD (its maximum)
    for b in [libc.malloc(1 << 20) for _ in range(192)]:
        libc.free(b)
    n, dim = 50_000, 4
    rng = np.random.default_rng(0)
    vec = rng.standard_normal((n, dim)).astype(np.float32)
    z = np.zeros(n, np.int64)
    cols = (z, z + 10, z, z, z + np.iinfo(np.int64).max, z.astype(np.uint64), np.ones(n, np.float32),
            np.full(n, -1, np.int32), np.zeros(n, np.uint16), np.zeros(n, np.uint8), None)
    st = _core.Store(dim, "l2", 8, 32, 1)
    st.ingest(vec[:2000], *(c[:2000] if c is not None else None for c in cols), 1)
    # 24 MiB more address space: two or three thread stacks, then thread starts fail
    pages = int(open("/proc/self/statm").read().split()[0])
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (pages * resource.getpagesize() + (24 << 20), hard))
    first = st.ingest(vec[2000:], *(c[2000:] if c is not None else None for c in cols), 100_000)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert first == 2000 and st.size == n
    assert np.array_equal(st.vectors(np.arange(n, dtype=np.uint32)), vec)
    print("OK", st.size)
""")


@pytest.mark.slow
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="RLIMIT_AS cannot be combined with AddressSanitizer (scripts/sanitize.sh), whose "
                           "shadow memory alone reserves terabytes of address space")
def test_thread_start_failure_finishes_the_batch(tmp_path):
    """100,000 threads asked, few can start (address space limited): the batch completes
    on the threads that started, instead of std::terminate (SIGABRT)."""
    env = dict(os.environ, MALLOC_ARENA_MAX="1")
    proc = subprocess.run([sys.executable, "-c", _THREADS], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, f"rc {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.split() == ["OK", "50000"], proc.stdout


# ----------------------------------------------------------------------------- ids

def _one(seed: int, ids=None) -> dict:
    rng = np.random.default_rng(seed)
    n = 1 if ids is None else len(ids)
    d = {"vector": rng.standard_normal((n, DIM)).astype(np.float32), "valid_from": ["2024-01-01"] * n}
    if ids is not None:
        d["id"] = np.asarray(ids, np.uint64)
    return d


def _ids(eng) -> list[int]:
    return eng.columns()["id"].tolist()


def test_automatic_ids_never_wrap():
    """After an explicit id 2^64 - 2 the next automatic id is 2^64 - 1 and then there is none:
    the batch is refused, whole, before anything changes (it wrapped onto id 0)."""
    eng = ce.Engine(DIM, threads=1)
    eng.ingest(_one(0))                      # id 0
    eng.ingest(_one(1, ids=[U64_MAX - 1]))
    before = _ids(eng)
    with pytest.raises(SchemaError, match=r"automatic ids exhausted.*pass explicit ids") as info:
        eng.ingest({"vector": np.ones((2, DIM), np.float32), "valid_from": ["2024-01-01"] * 2})
    assert isinstance(info.value, ValueError) and isinstance(info.value, ChronoError)
    assert _ids(eng) == before and len(eng) == 2
    assert eng.ingest(_one(2)).tolist() == [U64_MAX]
    with pytest.raises(SchemaError, match=r"automatic ids exhausted: the store holds id 18446744073709551615"):
        eng.ingest(_one(3))
    assert _ids(eng) == [0, U64_MAX - 1, U64_MAX]
    assert eng.rows_of(np.array([0, U64_MAX], np.uint64)).tolist() == [0, 2]
    assert eng.ingest(_one(4, ids=[5])).tolist() == [5]  # explicit ids still go in
    with pytest.raises(SchemaError, match="automatic ids exhausted"):
        eng.ingest(_one(5))
    assert len(eng) == 4


def test_explicit_max_id_is_allowed_then_automatic_ids_are_exhausted():
    eng = ce.Engine(DIM, threads=1)
    assert eng.ingest(_one(0, ids=[U64_MAX])).tolist() == [U64_MAX]
    with pytest.raises(SchemaError, match="automatic ids exhausted"):
        eng.ingest(_one(1))
    assert _ids(eng) == [U64_MAX]


def test_automatic_ids_after_restore_keep_the_rule(tmp_path):
    eng = ce.Engine(DIM, threads=1)
    eng.ingest(_one(0, ids=[U64_MAX]))
    eng.save(tmp_path / "s")
    back = ce.Engine.open(tmp_path / "s")
    with pytest.raises(SchemaError, match="automatic ids exhausted"):
        back.ingest(_one(1))


@pytest.mark.parametrize("dim", [0, 2**20 + 1, 2**62])
def test_dim_out_of_range_is_refused(dim):
    """4 dim overflowed hnswlib's record size (2^62: a 0-byte vector that searches overrun)."""
    with pytest.raises(ValueError, match=r"dim must be in \[1, 1048576\]"):
        _core.Store(dim, "cosine", M, EFC, SEED)


def test_m_below_two_is_refused():
    """hnswlib's levels use 1 / ln(M): M = 1 failed on the first point (and left the graph
    half-filled)."""
    with pytest.raises(ValueError, match="M must be at least 2, got 1"):
        _core.Store(DIM, "cosine", 1, EFC, SEED)
    assert _core.Store(DIM, "cosine", 2, EFC, SEED).M == 2


