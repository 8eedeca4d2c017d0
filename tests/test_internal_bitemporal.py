"""What a result table reads of its hits (``StoreState.hit_meta``: valid_from, valid_to as
known at one time or one per row, open ends, stems, in one native call) equals
``columns_at``, over the random event sequences of test_bitemporal.py. Internal: both are
the store's own reads, reached through tests/_internal.py."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import chrono_engine as ce
from _internal import state
from test_bitemporal import DIM, HOUR, OPEN_END, TX_BASE, Model, _apply, _event, _probes, _vec


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=2, max_size=12), st.integers(0, 2**32 - 1))
def test_hit_meta_equals_columns_at_as_known_then(events, seed):
    rng = np.random.default_rng(seed)
    eng, model = ce.Engine(dim=DIM), Model()
    _vec(rng)  # the query test_bitemporal draws first: the same rows and times follow
    txs = []
    for j, ev in enumerate([("ingest", 0, 1), *events]):
        tx = TX_BASE + j * HOUR
        if _apply(eng, model, ev, tx, rng):
            txs.append(tx)
    _, k = _probes(txs)
    rows = rng.integers(0, len(eng), 16).astype(np.uint32)
    for ka in (rng.choice(k, 16).astype(np.int64), k[:1].astype(np.int64)):
        got, want = state(eng).hit_meta(rows, ka), state(eng).columns_at(rows, ka)
        for name in ("valid_from", "valid_to", "stem"):
            np.testing.assert_array_equal(got[name], want[name])
        open_ = want["valid_to"] == OPEN_END
        if open_.any():
            np.testing.assert_array_equal(got["valid_to_valid"], ~open_)
        else:
            assert got["valid_to_valid"] is None
