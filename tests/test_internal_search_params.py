"""``_core.SearchParams``, the one object a search crosses into the core as: every field
checked once when made (a ValueError naming it), read-only afterwards, equal and hashed by
value; ``Engine.prepare_search`` makes it once per distinct options and reuses it."""
from __future__ import annotations

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import _core
from _internal import core

EVERY = dict(mode=2, fusion=1, alpha=0.25, tau=0.5, deprecated=1, future=2, deprecation_penalty=0.3, arbitrate=False,
             type_mask=None, k=7, exact=True, ef=40, ef_max=900, scan_limit=12, seed_ef=5, seed_min=6, group=3, scan=1)


@pytest.mark.parametrize("field, value", [
    ("mode", -1), ("mode", 4), ("fusion", 2), ("deprecated", 3), ("future", -1), ("scan", 3),
    ("alpha", -0.1), ("alpha", float("nan")), ("tau", 1.5), ("deprecation_penalty", float("inf")),
    ("k", 0), ("k", 2**31), ("ef", 0), ("ef_max", 0), ("scan_limit", -1), ("seed_ef", -1), ("seed_min", 2**62 + 1),
    ("group", -1), ("type_mask", np.zeros(0, np.uint8)), ("type_mask", np.zeros((2, 2), np.uint8)),
    ("type_mask", np.array([0, 2], np.uint8)), ("type_mask", np.ones(65537, np.uint8)),
])
def test_a_bad_field_is_a_value_error_naming_it(field, value):
    with pytest.raises(ValueError, match=f"SearchParams: {field} must be"):
        _core.SearchParams(**{**EVERY, field: value})


def test_fields_read_back_and_cannot_be_changed():
    p = _core.SearchParams(**{**EVERY, "type_mask": np.array([1, 0, 1], np.uint8)})
    for name, value in EVERY.items():
        if name != "type_mask":
            assert getattr(p, name) == value, name
    assert p.type_mask.tolist() == [1, 0, 1]
    p.type_mask[0] = 0  # a copy: the object keeps its flags
    assert p.type_mask.tolist() == [1, 0, 1]
    for name in EVERY:
        with pytest.raises(AttributeError):
            setattr(p, name, getattr(p, name))
    with pytest.raises(TypeError):
        _core.SearchParams(2)  # keywords only


def test_defaults_are_the_cores_and_the_engines():
    d = _core.SearchParams()
    assert (d.mode, d.fusion, d.alpha, d.tau, d.deprecated, d.future, d.deprecation_penalty, d.arbitrate, d.k,
            d.exact, d.type_mask) == (0, 0, 0.75, 0.0, 0, 1, 0.1, True, 10, False, None)
    eng = ce.Engine(4)
    made = eng.prepare_search(np.ones(4, np.float32), 10).params
    assert made == _core.SearchParams(ef=max(eng.ef, 40), ef_max=eng.ef_max, scan_limit=eng.scan_limit,
                                      seed_ef=eng.seed_ef, seed_min=eng.seed_min, group=eng.group)


def test_equality_hash_and_repr_are_by_value():
    a = _core.SearchParams(**{**EVERY, "type_mask": np.array([0, 1], np.uint8)})
    b = _core.SearchParams(**{**EVERY, "type_mask": np.array([0, 1], bool)})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != _core.SearchParams(**EVERY) and a != _core.SearchParams(**{**EVERY, "group": 4}) and a != "a"
    assert _core.SearchParams(tau=-0.0) == _core.SearchParams(tau=0.0)
    assert hash(_core.SearchParams(tau=-0.0)) == hash(_core.SearchParams(tau=0.0))
    for p in (a, _core.SearchParams(), _core.SearchParams(alpha=0.1 + 0.2)):
        assert eval(repr(p), {"SearchParams": _core.SearchParams}) == p
    assert "type_mask=<40 flags, 2 set>" in repr(_core.SearchParams(type_mask=(np.arange(40) < 2).astype(np.uint8)))


def test_search_params_are_made_once_per_set_of_values():
    eng = ce.Engine(4)
    eng.ingest([{"vector": [1, 0, 0, 0], "valid_from": "2024-01-01", "fact_type": "news"},
                {"vector": [0, 1, 0, 0], "valid_from": "2024-01-01", "fact_type": "policy"}])
    v = np.ones(4, np.float32)
    one = eng.prepare_search(v, 5, mode="as_of", as_of="2024-02-01").params
    assert eng.prepare_search(v, 5, mode="as_of", as_of="2025-01-01").params is one  # times apart
    assert eng.prepare_search(v, 5, mode="as_of", as_of=0, tau=-0.0).params == one
    news = eng.prepare_search(v, 5, fact_types=["news"]).params
    assert news.type_mask.tolist() == [1, 0] and eng.prepare_search(v, 5, fact_types=["news"]).params is news
    assert eng.prepare_search(v, 5, fact_types="news").params == news
    assert eng.prepare_search(v, 5, fact_types=["policy"]).params.type_mask.tolist() == [0, 1]
    eng.group = 8  # a planner setting: the engine's descriptions are made again
    assert eng.prepare_search(v, 5).params.group == 8
    eng.ingest([{"vector": [0, 0, 1, 0], "valid_from": "2024-01-01", "fact_type": "event"}])  # a new type: the mask
    assert eng.prepare_search(v, 5, fact_types=["news"]).params.type_mask.tolist() == [1, 0, 0]


def test_the_searches_take_only_a_search_params():
    eng = ce.Engine(4)
    eng.ingest([{"vector": [1, 0, 0, 0], "valid_from": "2024-01-01"}])
    one = np.zeros(1, np.int64)
    with pytest.raises(TypeError):
        core(eng).search_batch(np.ones((1, 4), np.float32), one, one, one, one, None, 1)
    with pytest.raises(TypeError):
        core(eng).search_batch(np.ones((1, 4), np.float32), one, one, one, one, EVERY, 1)
