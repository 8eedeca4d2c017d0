"""Fuzz ingest: mutated batches into ``Engine(dim=4).ingest``.

    python fuzz/fuzz_ingest.py -max_total_time=60 fuzz/corpus/ingest

Findings: any exception but a ChronoError; a refused call that changed the engine (row
count, stored columns, strings, stems, fact types); an accepted call after which the row
count is not the old one plus the ids returned, the new rows do not carry those ids, two
rows share an id, or search fails.

Input: byte 0 even: a structured batch (fuzz/_tables.py reads the rest as choices: the
engine's metric and decay policy, then one or two batches: container, rows, columns,
encodings, values); odd: the rest is an Arrow IPC stream, ingested as a table when pyarrow
reads and fully validates it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from _harness import Finding, Refused, attempt, instrumented, main, outcome

with instrumented():
    import chrono_engine as ce

from _tables import DIM, Reader, read_case  # noqa: E402 (after the instrumented import)

_BASE = {"vector": np.eye(DIM, dtype=np.float32)[:3] + 0.25,
         "valid_from": ["2020-01-01", "2021-01-01", "2022-01-01"],
         "stem_id": ["doc-0", "doc-1", "doc-0"], "version": ["v1", "v1", "v2"],
         "fact_type": ["general", "news", "general"], "content": ["a", "b", "c"]}
_POLICIES = (ce.DecayPolicy({"news": ce.Exponential(half_life=30)}, default=ce.Exponential(half_life=365)),
             ce.DecayPolicy({"general": ce.NoDecay(), "news": ce.Exponential(half_life=30)}, default=None))


def make_engine(metric: str = "cosine", policy: int = 0) -> ce.Engine:
    """A small engine holding three rows."""
    eng = ce.Engine(dim=DIM, metric=metric, decay=_POLICIES[policy], threads=1)
    eng.ingest(_BASE)
    return eng


def state(eng: ce.Engine) -> tuple:
    """Everything a refused ingest must leave as it was."""
    cols = eng.columns()
    strings = eng.get(cols["id"]) if len(eng) else None
    return (len(eng), {k: v.tobytes() for k, v in cols.items()}, strings, eng.stems, eng.fact_types)


def same(a: tuple, b: tuple) -> bool:
    """Whether two :func:`state` values are equal."""
    return a[0] == b[0] and a[1] == b[1] and a[3:] == b[3:] and (
        a[2] is b[2] or (a[2] is not None and b[2] is not None and a[2].equals(b[2])))


def check_ingest(eng: ce.Engine, rows) -> None:
    """One ingest call and the invariants around it."""
    before = state(eng)
    out = attempt(eng.ingest, rows)
    if isinstance(out, Refused):
        outcome(f"{type(out.error).__name__} {out.error}")
        if not same(before, state(eng)):
            raise Finding(f"a refused ingest ({out.error!r}) changed the engine")
        return
    if len(eng) != before[0] + len(out):
        raise Finding(f"ingest returned {len(out)} ids, the engine grew from {before[0]} to {len(eng)}")
    ids = eng.columns()["id"]
    if not np.array_equal(ids[before[0]:], out):
        raise Finding(f"ingest returned ids {out[:5]}, the rows added have {ids[before[0]:][:5]}")
    if len(np.unique(ids)) != len(ids):
        raise Finding(f"two rows share an id after ingest: {ids}")
    q = np.linspace(1.0, 2.0, DIM, dtype=np.float32)
    for kw in ({}, {"mode": "all"}):
        try:
            eng.search(q, k=5, **kw)
        except ce.errors.QueryError as e:
            # the one refusal a search makes of stored data: under ip / l2, finite vectors
            # whose similarity to the query overflows float32 (search.py, _overflowed)
            if "overflows float32" not in str(e):
                raise


def read_ipc(data: bytes):
    """The table in an Arrow IPC stream, or None when pyarrow cannot read or validate it."""
    try:
        table = pa.ipc.open_stream(data).read_all()
        table.validate(full=True)
        return table
    except (pa.ArrowException, ValueError, OSError):
        return None


def test_one_input(data: bytes) -> None:
    """One input: an engine and one or two ingest calls."""
    c = Reader(data)
    if c.choose(2, valid=0):
        table = read_ipc(c.rest())
        if table is not None:
            check_ingest(make_engine(), table)
        return
    metric, policy, batches = read_case(c)
    eng = make_engine(metric, policy)
    for rows in batches:
        if rows is None:
            return
        check_ingest(eng, rows)

if __name__ == "__main__":
    main(test_one_input, max_len=4096)
