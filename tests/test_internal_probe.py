"""The probe plan's partition in the compiled core against hostile arguments: the core's
``set_partition`` / ``assign_partition`` refuse them and change nothing. Internal: these
call the core directly (tests/_internal.py), which no public method does with such values."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from _internal import core as core_of

D = 384


@pytest.fixture(scope="module")
def eng():
    rng = np.random.default_rng(11)
    e = ce.Engine(D, threads=2)
    e.partition_min = 0
    e.ingest({"vector": rng.standard_normal((3000, D)).astype(np.float32), "valid_from": np.zeros(3000, np.int64)})
    return e


def test_hostile_partition_arguments_change_nothing(eng):
    core = core_of(eng)
    before = core.partition_info()
    assert before[0] > 0 and before[1] == len(eng)
    m0 = eng.partition()["members"]
    with pytest.raises(ValueError):
        core.set_partition(np.full((4, D), np.nan, np.float32), 0.1)
    with pytest.raises(ValueError):
        core.set_partition(np.zeros((4, D), np.float32), float("nan"))
    with pytest.raises(ValueError):
        core.set_partition(np.zeros((4, D + 1), np.float32), 0.1)
    with pytest.raises(ValueError):
        core.assign_partition(0, np.zeros(3, np.uint16))  # not from the first unassigned row
    with pytest.raises((ValueError, IndexError)):
        core.assign_partition(len(eng), np.zeros(3, np.uint16))  # beyond the store
    assert core.partition_info() == before
    assert all(np.array_equal(a, b) for a, b in zip(m0, eng.partition()["members"]))
