"""A live engine's graph against the graph restored from its saved file (tests/_internal.py
reaches the live core): the same vectors, metadata, graph walks, exact results, compact
copy and saved bytes. The graph file as untrusted input is test_graph_file.py."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from _internal import core as core_of
from chrono_engine import _core
from test_graph_file import DIM, EFC, M, _rows, graph_search, restore


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_round_trip_is_exact(tmp_path, metric):
    """A saved graph loads to the same vectors and the same graph and exact search results,
    and a store restored from it saves the same bytes."""
    rng = np.random.default_rng(3)
    eng = ce.Engine(DIM, metric=metric, M=M, ef_construction=EFC, threads=2)
    eng.ingest(_rows(rng, 700, scale=3.0))
    eng.ingest({**_rows(rng, 50), "id": np.arange(10**6, 10**6 + 50, dtype=np.uint64)})
    core = core_of(eng)
    path = tmp_path / "graph.bin"
    core.save_graph(str(path))
    cols = core.columns()
    st = restore(_core, path, cols, metric)
    rows = np.arange(len(eng), dtype=np.uint32)
    np.testing.assert_array_equal(st.vectors(rows), core.vectors(rows))
    for key, value in st.columns().items():
        np.testing.assert_array_equal(value, cols[key], err_msg=key)
    q = rng.normal(size=(20, DIM)).astype(np.float32)
    if metric == "cosine":
        q /= np.linalg.norm(q, axis=1, keepdims=True)
    for exact in (False, True):
        a, b = graph_search(core, q, 10, exact), graph_search(st, q, 10, exact)
        for key in ("id", "row", "score", "similarity"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    again = tmp_path / "again.bin"
    st.save_graph(str(again))
    a, b = again.read_bytes(), path.read_bytes()
    # byte for byte but the header's max_elements_ (bytes 8..16): a capacity, not content (a
    # loaded index keeps room to append), at least the row count in both
    assert a[:8] + a[16:] == b[:8] + b[16:]
    n = len(eng)
    assert min(int.from_bytes(a[8:16], "little"), int.from_bytes(b[8:16], "little")) >= n
    c0, c1 = core.compact(rows), st.compact(rows)
    for x, y in zip(c0, c1):
        np.testing.assert_array_equal(x, y)
