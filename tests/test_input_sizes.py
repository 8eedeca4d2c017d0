"""Work that grows with a caller's input stays linear in it: the argument checks of the
public entry points, at sizes where a quadratic check took seconds. No test here times
anything (speed is measured by scripts/input_scaling.py, at 1x, 10x and 100x, with the
service's bounds on the same inputs): each counts the work a quadratic check did, or shows
that the expensive step is never reached."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine.errors import QueryError

DIM = 4


@pytest.fixture(scope="module")
def eng():
    e = ce.Engine(dim=DIM, decay=ce.DecayPolicy({"news": ce.Exponential(half_life=30)}))
    e.ingest({"vector": np.eye(DIM, dtype=np.float32), "valid_from": ["2024-01-01"] * DIM,
              "fact_type": ["news", "news", "general", "general"]})
    return e


class _Name(str):
    """A fact type's name that counts the equality tests made on it: a list's ``in`` makes
    one for each item it passes, a dict's none (the hashes differ)."""

    compared = 0

    def __eq__(self, other):
        _Name.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_many_unknown_fact_types_are_refused_in_linear_time(eng):
    """Unknown fact types: each was looked up in the list of those already found unknown,
    n * n / 2 comparisons (30,000 names: ~8 s here; 100,000 in a service request stalled it
    for minutes). Counted: at most a few per name now."""
    n = 2_000
    names = [_Name(f"type-{i}") for i in range(n)]
    _Name.compared = 0
    with pytest.raises(QueryError, match="unknown fact types 'type-0', 'type-1'"):
        eng.search(np.ones(DIM, np.float32), fact_types=names)
    assert _Name.compared <= 4 * n  # a list's `in`: ~n * n / 2 = 2,000,000
    # duplicates are named once, known ones select as before
    with pytest.raises(QueryError) as info:
        eng.search(np.ones(DIM, np.float32), fact_types=["nope", "news", "nope"])
    assert str(info.value).count("'nope'") == 1
    assert eng.search(np.ones(DIM, np.float32), fact_types=["news"] * 1000, mode="all").num_rows == 2



def test_rows_each_with_a_key_of_their_own_are_refused_in_linear_time(monkeypatch):
    """Row dicts are made columns by one Arrow conversion, which unions every row's keys:
    n rows with a key each of their own made n columns of n rows (7,000: ~4 s; 100,000, as a
    service's --max-rows allows, ran out of memory) before the first unknown column was
    refused. The keys are checked first now, in one pass: the conversion is never reached."""
    e = ce.Engine(dim=DIM)
    rows = [{"vector": [1.0, 0.0, 0.0, 0.0], "valid_from": "2024-01-01", f"k{i}": 1} for i in range(7_000)]
    converted = []
    real = pa.array
    monkeypatch.setattr(pa, "array", lambda *a, **k: converted.append(1) or real(*a, **k))
    with pytest.raises(ce.errors.SchemaError, match="7000 columns beyond the engine's own") as info:
        e.ingest(rows)
    assert info.value.rule == "unknown column"
    assert not converted
    monkeypatch.undo()
    assert len(e) == 0


def test_score_columns_of_sparse_dicts_are_refused_in_linear_time():
    """ce.score keeps columns it does not read, as Arrow infers them: dicts each with a key
    of their own made a struct of n fields by n rows (8,000: ~5 s; the service's 100,000
    candidates, a 1.2 MB body, would not fit in memory). Dicts whose distinct keys times
    their number pass 2**24 cells are refused first; dense ones are kept as ever."""
    n = 8_000
    sparse = {"similarity": [0.5] * n, "observed_at": [1.7e15] * n, "extra": [{f"k{i}": 1} for i in range(n)]}

    with pytest.raises(QueryError, match="column 'extra': its dicts' distinct keys times their number"):
        ce.score(sparse, as_of="2025-01-01")  # refused before Arrow infers the struct
    nested = {"similarity": [0.5], "observed_at": [1.7e15], "extra": [[{f"k{i}": 1} for i in range(n)]]}
    with pytest.raises(QueryError, match="column 'extra'"):
        ce.score(nested, as_of="2025-01-01")
    dense = {**sparse, "extra": [{"a": i, "b": [i]} for i in range(n)]}
    assert ce.score(dense, as_of="2025-01-01").column("extra").to_pylist()[3] == {"a": 3, "b": [3]}


class _Values(list):
    """An ``$in`` list that counts the values read from it."""

    read = 0

    def __iter__(self):
        for x in list.__iter__(self):
            _Values.read += 1
            yield x

    def __getitem__(self, i):
        _Values.read += 1
        return list.__getitem__(self, i)


class _Level(dict):
    """A filter level that counts the levels whose keys were read."""

    opened = 0

    def items(self):
        _Level.opened += 1
        return dict.items(self)


def test_filters_past_their_bounds_are_refused_before_they_are_read():
    """where= (a search body's, and a scoped key's ANDed in by the service): an $in of a
    million values, an $or of 100,000 filters and a nesting 100,000 deep are refused by
    their counts before their contents are read (at most 10,000 terms and values, 32
    levels), each naming its path; within the bounds, the work is one pass over the filter."""
    from chrono_engine.search import filters
    e = ce.Engine(dim=DIM)
    e.ingest({"vector": np.eye(DIM, dtype=np.float32), "valid_from": ["2024-01-01"] * DIM,
              "tenant": ["a", "b", "a", "b"]})
    q = np.ones(DIM, np.float32)
    _Values.read = 0
    with pytest.raises(QueryError, match=r"where\.tenant\.\$in: the filter holds more than 10,000"):
        e.search(q, where={"tenant": {"$in": _Values(["x"] * 1_000_000)}})
    assert _Values.read == 0
    wide = _Values([{"tenant": str(i)} for i in range(100_000)])
    with pytest.raises(QueryError, match=r"where\.\$or: the filter holds more than 10,000"):
        e.search(q, where={"$or": wide})
    assert _Values.read == 0
    deep = {"tenant": "a"}
    for _ in range(100_000):
        deep = _Level({"$not": deep})
    _Level.opened = 0
    with pytest.raises(QueryError, match="nested deeper than 32 levels"):
        e.search(q, where=deep)
    assert _Level.opened <= 34
    # at the bound: every value read once, and the key's filter ANDed in adds one pass
    vals = _Values([str(i) for i in range(9_990)] + ["a"])
    _Values.read = 0
    w = filters.parse({"tenant": {"$in": vals}})
    assert _Values.read == len(vals)
    both = filters.absent_as_null(filters.parse({"tenant": "a"}), e.metadata) & w
    assert e.count(both) == 2 and e.search(q, 4, mode="all", where=both).num_rows == 2
