"""The service's group bodies from the Engine's private group path (tests/_internal.py and
``Engine._prepare`` / ``_group_table``): a coalesced group's per-call bodies, JSON and
Arrow, equal the per-call answers, and the natively written JSON bodies equal the Python
path's. The service over HTTP is tested in test_serve.py."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import chrono_engine as ce
from _internal import planner, state
from test_serve import DIM, _reference_hits, _rows


@pytest.mark.parametrize("opts", [{"mode": "all", "explain": True}, {"mode": "as_of", "as_of": "2024-05-02"},
                                  {"mode": "latest", "lang": "zh", "verify": 0.5}])
def test_group_bodies_equal_per_call_answers(opts):
    from chrono_engine.serve import _group_bodies
    eng = ce.Engine(dim=DIM)
    rows = _rows(80, seed=3)
    rows[3]["title"] = None
    rows[5]["valid_to"] = "2024-07-01T00:00:00.5Z"
    eng.ingest(rows)
    q = np.random.default_rng(4).normal(size=(9, DIM)).astype(np.float32)
    prepared = [eng._prepare(v, 6, None, opts) for v in q]
    table = eng._group_table([p for _, p in prepared], 6)
    columns = eng._group_table([p for _, p in prepared], 6, table=False)
    assert isinstance(columns, pa.Table) == ("verify" in opts)  # the gate's columns come with the table
    arrow = [i % 3 == 0 for i in range(9)]
    for answer in (table, columns):
        for i, (b, a) in enumerate(zip(_group_bodies(answer, arrow), arrow)):
            want = table.filter(pa.compute.equal(table.column("query"), i)).drop_columns(["query"])
            assert want.num_rows > 0
            if a:
                assert ipc.open_stream(pa.py_buffer(b)).read_all().equals(want)
            else:
                assert json.loads(b)["hits"] == _reference_hits(want)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_native_json_bodies_equal_the_python_path(lang):
    """A coalesced group's JSON bodies written natively (``search.result_json``) read back
    as the bodies the Python path writes from the result columns: null titles, versions,
    stems and open ends, a string table in three parts, a retraction, empty answers."""
    from chrono_engine import search as S
    from chrono_engine.serve import _group_bodies
    rng = np.random.default_rng(6)
    eng = ce.Engine(8, decay=ce.DecayPolicy(default=ce.Exponential(half_life=30)))
    rows = [{"vector": rng.standard_normal(8).astype(np.float32), "valid_from": f"2024-{1 + i % 12:02d}-01T{i % 24:02d}:00:00.{i:06d}",
             "valid_to": None if i % 3 else f"2025-{1 + i % 12:02d}-01", "title": None if i % 5 == 0 else f'T"{i}\\\n\t',
             "version": None if i % 7 == 0 else f"{i % 4}.{i % 3}", "stem_id": None if i % 2 else f"s{i % 40}",
             "content": "内容\u2028\x01" * (i % 4)} for i in range(300)]
    for a, b in ((0, 100), (100, 150), (150, 300)):
        eng.ingest(rows[a:b])
    eng.retract(ids=[3])
    st, pl = state(eng), planner(eng)
    for i in range(20):
        opts = ce.SearchOptions(mode="as_of", as_of=f"{2023 + (i % 7 == 0)}-{1 + i % 12:02d}-15", lang=lang,
                                arbitrate=i % 3 > 0)
        q = S.query_vectors(rng.standard_normal((1 + i % 4, 8)).astype(np.float32), 8, "cosine")
        out, t = S.core_search(st, q, 10, opts, pl, 1)
        native = S.result_json(st, out, lang, len(q))
        python = _group_bodies(S.result_columns(st, out, False, lang, t, S.MODES[opts.mode]), [False] * len(q))
        assert len(native) == len(python) == len(q)
        for a, b in zip(native, python):
            assert json.loads(a) == json.loads(b)
            assert isinstance(a, bytes)
