"""The store's result-metadata reads against hostile rows and times: what a
result table reads of its hits (``Store.hit_meta``) and their stem ids
(``Names.take_valid``). Internal: the engine's core and stem names are reached through
tests/_internal.py."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from _internal import core as core_of, state

OPEN_END = np.iinfo(np.int64).max


def test_result_metadata_calls_refuse_bad_rows_and_times():
    """hit_meta (a result table's metadata of its hits) and Names.take_valid (its stem ids):
    a row or code out of range, or a known_at of the wrong length, is an error, not a read
    past the columns; take_valid gives take's buffers and marks code -1 null."""
    eng = ce.Engine(dim=2)
    eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01", "stem_id": "P"},
                {"vector": [0, 1], "valid_from": "2024-01-01", "valid_to": "2025-01-01"}])
    core = core_of(eng)
    with pytest.raises(IndexError, match="row out of range"):
        core.hit_meta(np.array([0, 2], np.uint32), np.array([OPEN_END], np.int64))
    with pytest.raises(ValueError, match="known_at must hold one time or one per row"):
        core.hit_meta(np.array([0, 1], np.uint32), np.array([1, 2, 3], np.int64))
    with pytest.raises(ValueError, match="known_at must hold one time or one per row"):
        core.hit_meta(np.array([0, 1], np.uint32), np.zeros(0, np.int64))
    vf, vt, valid, stem = core.hit_meta(np.array([1, 0], np.uint32), np.array([OPEN_END], np.int64))
    assert vt[1] == OPEN_END and valid.tolist() == [True, False] and stem.tolist() == [-1, 0]
    assert core.hit_meta(np.array([1], np.uint32), np.array([OPEN_END], np.int64))[2] is None
    names = state(eng).stems
    codes = np.array([0, -1, 0], np.int32)
    off, data, ok = names.take_valid(codes)
    want = names.take(codes)
    np.testing.assert_array_equal(off, want[0])
    np.testing.assert_array_equal(data, want[1])
    assert ok.tolist() == [True, False, True] and names.take_valid(codes[:1])[2] is None
    for bad in (np.array([1], np.int32), np.array([-2], np.int32)):
        with pytest.raises(IndexError, match="out of range"):
            names.take_valid(bad)
