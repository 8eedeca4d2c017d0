"""The service's natively written JSON bodies (``search.result_json``, from the core's raw
answer through tests/_internal.py) equal the Python path's. The service over HTTP, and a
group's bodies through the public seam, are tested in test_serve.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

import chrono_engine as ce
from _internal import state
from test_serve import DIM, _reference_hits, _rows


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_native_json_bodies_equal_the_python_path(lang):
    """A coalesced group's JSON bodies written natively (``search.result_json``) read back
    as the bodies the Python path writes from the result columns: null titles, versions,
    stems and open ends, a string table in three parts, a retraction, empty answers."""
    from chrono_engine import search as S
    from chrono_engine.serve.encode import group_bodies as _group_bodies
    rng = np.random.default_rng(6)
    eng = ce.Engine(8, decay=ce.DecayPolicy(default=ce.Exponential(half_life=30)))
    rows = [{"vector": rng.standard_normal(8).astype(np.float32), "valid_from": f"2024-{1 + i % 12:02d}-01T{i % 24:02d}:00:00.{i:06d}",
             "valid_to": None if i % 3 else f"2025-{1 + i % 12:02d}-01", "title": None if i % 5 == 0 else f'T"{i}\\\n\t',
             "version": None if i % 7 == 0 else f"{i % 4}.{i % 3}", "stem_id": None if i % 2 else f"s{i % 40}",
             "content": "内容\u2028\x01" * (i % 4)} for i in range(300)]
    for a, b in ((0, 100), (100, 150), (150, 300)):
        eng.ingest(rows[a:b])
    eng.retract(ids=[3])
    st = state(eng)
    for i in range(20):
        opts = ce.SearchOptions(mode="as_of", as_of=f"{2023 + (i % 7 == 0)}-{1 + i % 12:02d}-15", lang=lang,
                                arbitrate=i % 3 > 0)
        q = rng.standard_normal((1 + i % 4, 8)).astype(np.float32)
        out, t = S.core_search(st, eng.prepare_batch(q, 10, opts), 1)
        native = S.result_json(st, out, lang, len(q))
        python = _group_bodies(S.result_columns(st, out, False, lang, t, S.MODES[opts.mode]), [False] * len(q))
        assert len(native) == len(python) == len(q)
        for a, b in zip(native, python):
            assert json.loads(a) == json.loads(b)
            assert isinstance(a, bytes)
