"""Persistence through the Engine's internals (tests/_internal.py): a save whose compiled
core fails with a non-OS error part-way (the core swapped for a wrapper that raises) keeps
the previous copy and releases the write lock; the core's vector fingerprints, which bind
meta.arrow to graph.bin, equal their NumPy definition."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
import chrono_engine.storage.checkpoint as storage_module
from _internal import state
from test_persistence import _assert_previous_copy, _grown, _snaps, copy_of, corpus, engine, saved  # noqa: F401


def test_non_os_error_mid_save_keeps_previous_copy(engine, corpus, copy_of):  # noqa: F811
    eng = _grown(corpus, copy_of)

    class Exploding:
        def __init__(self, core):
            self._c = core

        def __getattr__(self, name):
            if name == "save_graph":
                raise MemoryError("simulated allocation failure")
            return getattr(self._c, name)

    st = state(eng)
    real = st.core
    st.core = Exploding(real)
    try:
        with pytest.raises(MemoryError):
            eng.save(copy_of)
    finally:
        st.core = real
    _assert_previous_copy(copy_of, eng, corpus)
    assert not st.write.locked()  # the writer lock was released
    eng.save(copy_of)  # and a later save works and cleans up
    assert len(_snaps(copy_of)) == 1
    assert len(ce.Engine.open(copy_of, read_only=True)) == len(engine) + 40


@pytest.mark.parametrize("dim, metric", [(3, "l2"), (16, "cosine"), (97, "ip")])
def test_core_vector_fingerprints_equal_the_numpy_reference(dim, metric):
    """The fingerprints that bind meta.arrow to graph.bin, computed by the core on several
    threads, equal the NumPy definition (bit patterns x weights mod 2**64), for more rows
    than one thread's chunk, negative zeros, subnormals and huge values included."""
    rng = np.random.default_rng(dim)
    n = 9000
    x = rng.normal(size=(n, dim)).astype(np.float32)
    x[0] = -0.0 if metric != "cosine" else x[0]
    x[1, 0] = np.float32(1e-40) if metric != "cosine" else x[1, 0]
    x[2] *= np.float32(1e30) if metric == "l2" else 1
    e = ce.Engine(dim, metric=metric, threads=2)
    e.ingest({"vector": x, "valid_from": np.full(n, 0, np.int64), "content": ["c"] * n})
    got = storage_module.vector_hashes(state(e))
    w = storage_module.hash_weights()[:dim]
    bits = e.vectors().view(np.uint32).astype(np.uint64)  # the stored vectors, in row order
    want = (bits * w).sum(axis=1)  # the definition: bit patterns x weights, mod 2**64
    assert got.dtype == np.uint64 and len(got) == n
    np.testing.assert_array_equal(got, want)
