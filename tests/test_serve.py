"""``chrono serve`` through real HTTP on loopback (uvicorn in a thread, httpx clients): the
endpoints against the engine's own answers, the auth matrix, every limit's refusal with the
store unchanged, hostile bodies never a 5xx, concurrent clients equal to a sequential replay,
and a graceful shutdown that keeps every acknowledged write."""
from __future__ import annotations

import io
import json
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import chrono_engine as ce  # noqa: E402
from chrono_engine.errors import ConfigError  # noqa: E402
from chrono_engine.serve import ARROW, Keys, Limits, make_app  # noqa: E402

DIM = 8
ADMIN, READ = "admin-key-0123456789", "read-key-0123456789"
C = "/v1/collections/s"


class Server:
    """An app served by uvicorn on 127.0.0.1 (a free port) in a thread."""

    def __init__(self, app):
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None,
                                                    access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self):
        self.server.should_exit = True
        self.thread.join(30)
        assert not self.thread.is_alive()


def _rows(n, seed=0, start=0):
    rng = np.random.default_rng(seed)
    return [{"vector": rng.normal(size=DIM).astype(np.float32).tolist(),
             "valid_from": f"2024-{1 + (start + i) % 12:02d}-01", "title": f"doc {start + i}",
             "stem_id": f"s{(start + i) % 5}" if i % 2 else None, "version": "1" if i % 2 else None}
            for i in range(n)]


@pytest.fixture
def served(tmp_path):
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(60))
    keys = Keys([ADMIN.encode()], [READ.encode()])
    srv = Server(make_app(eng, name="s", keys=keys, limits=Limits(max_body=200_000, max_batch=16, max_rows=50,
                                                                  max_k=20), log=False))
    yield srv, eng, tmp_path / "s"
    if srv.thread.is_alive():
        srv.stop()
    eng.close()


def _client(srv, key=ADMIN):
    return httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=30)


def test_search_equals_the_engine(served):
    srv, eng, _ = served
    q = np.random.default_rng(5).normal(size=(4, DIM)).astype(np.float32)
    with _client(srv, READ) as c:
        r = c.post(f"{C}/search", json={"vector": q[0].tolist(), "k": 5, "mode": "as_of", "as_of": "2024-06-15"})
        assert r.status_code == 200, r.text
        want = eng.search(q[0], 5, mode="as_of", as_of="2024-06-15")
        assert [h["id"] for h in r.json()["hits"]] == want.column("id").to_pylist()
        assert [h["citation"] for h in r.json()["hits"]] == want.column("citation").to_pylist()
        r = c.post(f"{C}/search/batch", json={"vectors": q.tolist(), "k": 3}, headers={"Accept": ARROW})
        assert r.status_code == 200 and r.headers["content-type"] == ARROW
        got = ipc.open_stream(pa.py_buffer(r.content)).read_all()
        assert got.column("id").to_pylist() == eng.search_batch(q, 3).column("id").to_pylist()
        info = c.get(C).json()
        assert info["items"] == 60 and info["dim"] == DIM
        assert c.get("/v1/collections").json() == {"collections": ["s"]}
        h = c.get(f"{C}/history/s1").json()["rows"]
        assert [x["id"] for x in h] == eng.history("s1").column("id").to_pylist()
        v = c.post(f"{C}/validity", json={"at": "2025-01-01", "ids": [0, 1]}).json()["validity"]
        np.testing.assert_allclose(v, eng.validity("2025-01-01", [0, 1]), rtol=1e-12)


def test_writes_through_http(served):
    srv, eng, path = served
    with _client(srv) as c:
        r = c.post(f"{C}/ingest", json={"rows": _rows(3, seed=9, start=100)})
        assert r.status_code == 200, r.text
        assert r.json()["ids"] == [60, 61, 62]
        t = pa.table({"vector": pa.array(np.ones((2, DIM), np.float32).tolist(), pa.list_(pa.float32(), DIM)),
                      "valid_from": ["2024-03-01", "2024-04-01"]})
        sink = io.BytesIO()
        with ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        r = c.post(f"{C}/ingest", content=sink.getvalue(), headers={"Content-Type": ARROW})
        assert r.status_code == 200 and r.json()["ids"] == [63, 64]
        r = c.post(f"{C}/supersede", json={"stem_id": "s1", "rows": [{"vector": [1.0] * DIM}],
                                           "effective_at": "2025-01-01", "version": "2"})
        assert r.status_code == 200, r.text
        assert c.post(f"{C}/retract", json={"ids": [0]}).status_code == 200
        assert c.post(f"{C}/deprecate", json={"ids": [2], "effective_at": "2024-05-01"}).status_code == 200
        assert c.post(f"{C}/snapshots").status_code == 200
    assert len(eng) == 66
    srv.stop()
    eng.close()
    again = ce.Engine.open(path, read_only=True)
    assert len(again) == 66 and again.history("s1").num_rows == len(eng.history("s1"))


@pytest.mark.parametrize("method, path, body, write", [
    ("post", "/search", {"vector": [1.0] * DIM}, False), ("get", "", None, False), ("get", "/history/s1", None, False),
    ("post", "/ingest", {"rows": _rows(1, start=7)}, True), ("post", "/retract", {"ids": [3]}, True),
    ("post", "/snapshots", None, True),
])
def test_auth_matrix(served, method, path, body, write):
    srv, eng, _ = served
    n = len(eng)
    for key, want in ((None, 401), ("wrong-key-0123456789", 401), (READ, 403 if write else 200), (ADMIN, 200)):
        with _client(srv, key) as c:
            r = getattr(c, method)(C + path, **({"json": body} if body is not None else {}))
            assert r.status_code == want, (key, r.text)
            if want != 200:
                assert r.json()["error"] == "authorization"
    assert len(eng) == n + (1 if path == "/ingest" else 0)
    with httpx.Client(base_url=srv.url) as c:  # health and the schema need no key
        assert c.get("/livez").status_code == 200 and c.get("/readyz").status_code == 200
        assert c.get("/openapi.json").json()["openapi"].startswith("3.")
        assert c.get("/metrics").status_code == 401
    with _client(srv, READ) as c:
        assert "chrono_requests_total" in c.get("/metrics").text


def test_ingest_storage_order(served, tmp_path):
    """``order`` (the JSON body's field, or ``?order=`` for either body) stores the batch as
    Engine.ingest(order=...) does: the same ids (automatic ones numbering the rows as
    stored: a reversed batch's ids count down), the rows in the same stored order."""
    srv, eng, _ = served
    ref = ce.Engine(DIM, threads=1)
    ref.ingest(_rows(60))
    a, b = _rows(6, seed=9, start=100)[::-1], _rows(4, seed=10, start=200)[::-1]
    t = pa.table({"vector": pa.array([r["vector"] for r in b], pa.list_(pa.float32(), DIM)),
                  "valid_from": [r["valid_from"] for r in b], "title": [r["title"] for r in b]})
    sink = io.BytesIO()
    with ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    with _client(srv) as c:
        r = c.post(f"{C}/ingest", json={"rows": a, "order": "valid_from"})
        assert r.status_code == 200, r.text
        assert r.json()["ids"] == ref.ingest(a, order="valid_from").tolist() == list(range(65, 59, -1))
        r = c.post(f"{C}/ingest?order=valid_from", content=sink.getvalue(), headers={"Content-Type": ARROW})
        assert r.status_code == 200, r.text
        assert r.json()["ids"] == ref.ingest(t, order="valid_from").tolist() == list(range(69, 65, -1))
        before = eng.columns()
        r = c.post(f"{C}/ingest?order=input", json={"rows": a, "order": "input"})
        assert r.status_code == 422 and r.json()["error"] == "order"
        r = c.post(f"{C}/ingest?order=sorted", content=sink.getvalue(), headers={"Content-Type": ARROW})
        assert r.status_code == 422 and r.json()["error"] == "order"
    got, want = eng.columns(), ref.columns()
    stored_titles = eng.get(got["id"][60:]).column("title").to_pylist()
    assert len(eng) == 70 and stored_titles == [r["title"] for r in a[::-1] + b[::-1]]  # stored by valid_from
    for k in ("id", "valid_from", "valid_to", "stem"):
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
        np.testing.assert_array_equal(got[k], before[k], err_msg=k)  # the refusals changed nothing
    np.testing.assert_array_equal(eng.vectors(), ref.vectors())


@pytest.mark.parametrize("path, body, status, field", [
    ("/search", {"vector": [1.0] * DIM, "k": 21}, 422, "k"),
    ("/search", {"vector": [1.0] * DIM, "k": True}, 422, "k"),
    ("/search/batch", {"vectors": [[1.0] * DIM] * 17}, 422, "vectors"),
    ("/ingest", {"rows": _rows(51)}, 422, "rows"),
    ("/ingest", {"rows": [{"vector": [1.0] * (DIM + 1), "valid_from": "2024-01-01"}]}, 422, "SchemaError"),
    ("/ingest", {"rows": [{"vector": [1.0] * DIM, "valid_form": "2024-01-01"}]}, 422, "SchemaError"),
    ("/ingest", {"rows": _rows(2), "order": "sideways"}, 422, "order"),
    ("/ingest", {"rows": _rows(2), "order": ["input"]}, 422, "order"),
    ("/ingest", {"rows": _rows(2), "ordre": "input"}, 422, "ordre"),
    ("/search", {"vector": [1.0] * DIM, "mode": "sideways"}, 422, "QueryError"),
    ("/search", {"vector": [1.0] * DIM, "nonsense": 1}, 422, "nonsense"),
    ("/search", {"k": 3}, 422, "vector"),
    ("/retract", {"ids": [10**6]}, 404, "NotFoundError"),
    ("/validity", {"at": "2025-01-01"}, 422, "ids"),  # 60 items, limit 50: ids required
    ("/validity", {"at": "2025-01-01", "ids": list(range(51))}, 422, "ids"),
    ("/supersede", {"stem_id": "s1", "rows": [{"vector": [1.0] * DIM}], "effective_at": "2020-01-01",
                    "version": "0"}, 422, "LifecycleError"),
    # every list a body holds is bounded (the fixture's max_rows is 50; fact types 1,024 by default)
    ("/search", {"vector": [1.0] * DIM, "fact_types": ["x"] * 1025}, 422, "fact_types"),
    ("/search/batch", {"vectors": [[1.0] * DIM], "fact_types": ["x"] * 1025}, 422, "fact_types"),
    ("/retract", {"ids": list(range(51))}, 422, "ids"),
    ("/deprecate", {"ids": list(range(51)), "effective_at": "2024-05-01"}, 422, "ids"),
    ("/retract", {"ids": [0], "when": "now"}, 422, "when"),
    ("/verify", {"chains": [[]] * 51, "at": "2025-01-01", "gamma": 0.5}, 422, "chains"),
    ("/verify", {"chains": [[[]] * 51], "at": "2025-01-01", "gamma": 0.5}, 422, "chains"),
    ("/score", {"candidates": {f"c{i}": [1.0] for i in range(65)}, "as_of": "2025-01-01"}, 422, "candidates"),
    ("/query", {"text": "x" * 10_001}, 422, "text"),
    # booleans are not numbers (they were read as 1 and 0)
    ("/search", {"vector": [True] + [0.0] * (DIM - 1)}, 422, "QueryError"),
    ("/search", {"vector": [0.5, True] + [0.0] * (DIM - 2)}, 422, "QueryError"),
    ("/search/batch", {"vectors": [[1.0] * DIM, [0.5, True] + [0.0] * (DIM - 2)]}, 422, "QueryError"),
    ("/ingest", {"rows": [{"vector": [0.5, True] + [0.0] * (DIM - 2), "valid_from": "2024-01-01"}]}, 422,
     "SchemaError"),
    ("/score", {"candidates": {"similarity": [0.5, True], "valid_from": ["2024-01-01"] * 2}, "as_of": "2025-01-01"},
     422, "QueryError"),
    ("/validity", {"at": "2025-01-01", "ids": [0, True]}, 422, "QueryError"),
])
def test_limits_and_refusals_change_nothing(served, path, body, status, field):
    srv, eng, _ = served
    before = (len(eng), eng.columns(), eng.history("s1"))
    with _client(srv) as c:
        r = c.post(C + path, json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == field
    if "true" in json.dumps(body) and field in ("QueryError", "SchemaError"):
        assert "boolean" in r.json()["message"], r.text
    assert len(eng) == before[0] and eng.history("s1").equals(before[2])
    for k, v in eng.columns().items():
        np.testing.assert_array_equal(v, before[1][k])


def test_long_lists_are_refused_before_they_are_read(served):
    """20,000 unknown fact types (a 0.2 MB body) were checked on the event loop in ~3.5 s,
    /livez waiting meanwhile: refused by their count now, at once, naming the limit."""
    srv, eng, _ = served
    with _client(srv, READ) as c:
        r = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "fact_types": [str(i) for i in range(20_000)]})
        assert r.status_code == 422 and r.json()["error"] == "fact_types"
        assert "20000 fact types exceed the limit of 1024" in r.json()["message"]
        r = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "fact_types": ["x", "y"]})
        assert r.status_code == 422 and r.json()["error"] == "QueryError"  # under the limit: the engine's check


def test_inputs_past_their_default_limits_are_refused_by_count(tmp_path):
    """Each list or string a body brings, just past its default limit: a 422 naming the
    field and the limit (counted before it is read; the store unchanged).
    scripts/input_scaling.py measures the work at 1x, 10x and 100x below the limits."""
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(10))
    srv = Server(make_app(eng, name="s", keys=Keys([ADMIN.encode()], []), log=False))
    n = Limits().max_rows + 1
    bodies = [("/search", {"vector": [1.0] * DIM, "fact_types": ["x"] * 1025}, "fact_types"),
              ("/search/batch", {"vectors": [[1.0] * DIM] * 1025}, "vectors"),
              ("/validity", {"at": "2025-01-01", "ids": list(range(n))}, "ids"),
              ("/retract", {"ids": list(range(n))}, "ids"),
              ("/deprecate", {"ids": list(range(n))}, "ids"),
              ("/verify", {"chains": [[[0]]] * n, "at": "2025-01-01", "gamma": 0.5}, "chains"),
              ("/verify", {"chains": [[[0]] * n], "at": "2025-01-01", "gamma": 0.5}, "chains"),
              ("/verify", {"chains": [[[0] * n]], "at": "2025-01-01", "gamma": 0.5}, "chains"),
              ("/score", {"candidates": {"similarity": [0.5] * n}, "as_of": "2025-01-01"}, "candidates"),
              ("/query", {"text": "x" * 10_001}, "text"),
              ("/ingest", {"rows": [{}] * n}, "rows"),
              ("/supersede", {"stem_id": "a", "rows": [{}] * n, "effective_at": "2025-01-01"}, "rows")]
    try:
        with _client(srv) as c:
            for path, body, field in bodies:
                r = c.post(C + path, json=body)
                assert r.status_code == 422 and r.json()["error"] == field, (path, r.text)
                assert "limit" in r.json()["message"] or "at most" in r.json()["message"], r.text
        assert len(eng) == 10 and (eng.columns()["retracted_at"] == np.iinfo(np.int64).max).all()  # none retracted
    finally:
        srv.stop()
        eng.close()


def _ipc(table, compression=None):
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression=compression)) as w:
        w.write_table(table)
    return sink.getvalue()


def _views_of_one(value: bytes, n: int) -> pa.Array:
    """``n`` string views all pointing at one long ``value`` (its bytes sent once)."""
    head = np.zeros((n, 4), "<i4")
    head[:, 0], head[:, 1] = len(value), int.from_bytes(value[:4], "little", signed=True)
    return pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(head.tobytes()), pa.py_buffer(value)])


def test_arrow_bodies_are_bounded_by_what_they_decode_to(served):
    """An IPC body's bytes did not bound what it decodes to: 4.9 kB of zstd carried a 128
    MiB string into the log and the store. Compressed buffers are sized from the lengths
    they start with, before any is decompressed; dictionaries and string views as they
    expand; past --max-body (200,000 here) a 413 naming the limit, the store unchanged."""
    srv, eng, _ = served
    n = 50
    base = {"vector": pa.array(np.ones((n, DIM), np.float32).tolist(), pa.list_(pa.float32(), DIM)),
            "valid_from": pa.array(["2024-03-01"] * n)}
    big = "x" * (8 << 20)
    bombs = {"zstd": _ipc(pa.table({**base, "title": pa.array([big] + [None] * (n - 1))}), "zstd"),
             "lz4": _ipc(pa.table({**base, "title": pa.array([big[: 1 << 20]] + [None] * (n - 1))}), "lz4"),
             "dictionary": _ipc(pa.table({**base, "title": pa.DictionaryArray.from_arrays(
                 pa.array(np.zeros(n, np.int32)), pa.array(["y" * 100_000]))})),
             "views": _ipc(pa.table({**base, "title": _views_of_one(b"z" * 100_000, n)}))}
    before = len(eng)
    with _client(srv) as c:
        for what, body in bombs.items():
            assert len(body) < 200_000, what
            r = c.post(f"{C}/ingest", content=body, headers={"Content-Type": ARROW})
            assert r.status_code == 413 and r.json()["error"] == "body", (what, r.text)
            assert "beyond the limit of 200000" in r.json()["message"], r.text
            if what in ("zstd", "lz4"):  # refused from the lengths, before any buffer is decompressed
                assert "its buffers, decompressed," in r.json()["message"], r.text
        ree = pa.RunEndEncodedArray.from_arrays(pa.array([n], pa.int32()), pa.array(["abc"]))
        r = c.post(f"{C}/ingest", content=_ipc(pa.table({**base, "title": ree})), headers={"Content-Type": ARROW})
        assert r.status_code == 422 and "run_end_encoded" in r.json()["message"], r.text
        assert len(eng) == before
        # within the limit, compressed, dictionary-encoded and view bodies are taken as ever
        small = {**base, "title": pa.array(["t"] * n).dictionary_encode(), "content": _views_of_one(b"c" * 40, n)}
        for comp in (None, "zstd", "lz4"):
            r = c.post(f"{C}/ingest", content=_ipc(pa.table(small), comp), headers={"Content-Type": ARROW})
            assert r.status_code == 200, (comp, r.text)
    assert len(eng) == before + 3 * n
    assert eng.search(np.ones(DIM, np.float32), 1, mode="all").column("title").to_pylist() == ["t"]


def test_mutated_search_bodies_never_get_a_5xx(served):
    """Valid search bodies truncated, with bytes flipped, and with vectors of mixed, huge,
    nested or non-numeric entries (the native list conversion's inputs): a 4xx naming the
    problem or a 200 with valid JSON hits, never a 5xx, the store unchanged."""
    srv, eng, _ = served
    n = len(eng)
    rng = np.random.default_rng(11)
    good = json.dumps({"vector": [0.5] * DIM, "k": 3}).encode()
    entries = [1, True, None, "1", [1.0], 2 ** 70, -(2 ** 25), 1e308, -1e39, 0, {"a": 1}]
    with _client(srv) as c:
        for i in range(300):
            if i % 3 == 0:
                b = good[:int(rng.integers(0, len(good)))]
            elif i % 3 == 1:
                b = bytearray(good)
                for j in rng.integers(0, len(b), 3):
                    b[j] = int(rng.integers(0, 256))
                b = bytes(b)
            else:
                v = [0.5] * DIM
                for j in rng.integers(0, DIM, int(rng.integers(1, 3))):
                    v[j] = entries[int(rng.integers(0, len(entries)))]
                b = json.dumps({"vector": v, "k": 3}).encode()
            r = c.post(f"{C}/search", content=b, headers={"Content-Type": "application/json"})
            assert r.status_code < 500, (b[:80], r.status_code, r.text[:200])
            if r.status_code == 200:
                assert len(r.json()["hits"]) <= 3
            else:
                assert r.json()["error"] and r.json()["message"]
    assert len(eng) == n


def test_hostile_bodies_never_get_a_5xx(served):
    srv, eng, _ = served
    n = len(eng)
    bodies = [b"", b"{", b"[]", b"null", b'"x"', b"NaN", b'{"vector": NaN}', b"[" * 100_000 + b"]" * 100_000,
              b'{"vector": "' + b"a" * 1000 + b'"}', b"\xff\xfe", b'{"vector": [1e400]}',
              b'{"vectors": [[' + b"1," * 7 + b"1]], \"k\": 99999999999999999999999}", b"x" * 250_000,
              json.dumps({"rows": [{"vector": [1] * DIM, "valid_from": "\ud800"}]}, ensure_ascii=True).encode(),
              b'{"ids": [-1]}', b'{"ids": [1.5]}', b'{"ids": "all"}', b'{"at": {"a": 1}}']
    paths = ["/search", "/search/batch", "/ingest", "/supersede", "/retract", "/deprecate", "/validity", "/query",
             "/score", "/verify"]
    with _client(srv) as c:
        for p in paths:
            for b in bodies:
                r = c.post(C + p, content=b, headers={"Content-Type": "application/json"})
                assert 400 <= r.status_code < 500, (p, b[:40], r.status_code, r.text[:200])
        r = c.post(C + "/ingest", content=b"\x00" * 1000, headers={"Content-Type": ARROW})
        assert r.status_code == 400 and r.json()["error"] == "body"
        assert c.post("/v1/collections/other/search", json={"vector": [1.0] * DIM}).status_code == 404
    assert len(eng) == n


def test_concurrent_clients_equal_a_sequential_replay(served):
    srv, eng, _ = served
    rng = np.random.default_rng(11)
    qs = [(rng.normal(size=DIM).tolist(), f"2024-{1 + i % 12:02d}-15") for i in range(128)]
    with _client(srv, READ) as c:
        seq = [c.post(f"{C}/search", json={"vector": v, "k": 5, "mode": "as_of", "as_of": t}).json() for v, t in qs]
    got = [None] * len(qs)

    def work(j):
        with _client(srv, READ) as c:
            for i in range(j, len(qs), 16):
                v, t = qs[i]
                got[i] = c.post(f"{C}/search", json={"vector": v, "k": 5, "mode": "as_of", "as_of": t}).json()
    ts = [threading.Thread(target=work, args=(j,)) for j in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == seq


@pytest.mark.slow
def test_shutdown_during_writes_loses_no_acknowledged_write(served):
    srv, eng, path = served
    acked, stop = [], threading.Event()

    def writer(j):
        with _client(srv) as c:
            i = 0
            while not stop.is_set() and i < 200:
                try:
                    r = c.post(f"{C}/ingest", json={"rows": _rows(1, seed=j * 1000 + i, start=1000 + j * 1000 + i)})
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    acked.extend(r.json()["ids"])
                i += 1
    ts = [threading.Thread(target=writer, args=(j,)) for j in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    srv.stop()  # graceful: in-flight requests finish, then a checkpoint
    stop.set()
    for t in ts:
        t.join()
    eng.close()
    again = ce.Engine.open(path, read_only=True)
    assert acked and bool(again.contains(acked).all())


def test_a_server_without_keys_needs_no_auth_explicitly():
    eng = ce.Engine(dim=2)
    with pytest.raises(ConfigError, match="API keys"):
        make_app(eng)
    make_app(eng, allow_anonymous=True, log=False)


def test_keys_file(tmp_path, monkeypatch):
    monkeypatch.delenv("CHRONO_API_KEYS", raising=False)
    monkeypatch.setenv("CHRONO_READ_KEYS", "r-envkey-123456")
    f = tmp_path / "keys"
    f.write_text("# keys\nadmin a-filekey-123456\nread r-filekey-123456\n")
    k = Keys.from_env(f)
    assert k.role(b"a-filekey-123456") == "admin" and k.role(b"r-filekey-123456") == "read"
    assert k.role(b"r-envkey-123456") == "read" and k.role(b"nope") is None and k.role(None) is None
    f.write_text("admin short\n")
    with pytest.raises(ConfigError, match="line 1") as info:
        Keys.from_env(f)
    assert "short" not in str(info.value)  # a key is never echoed


@pytest.mark.slow
def test_chrono_serve_process_stops_gracefully_and_keeps_writes(tmp_path):
    """`chrono serve` as a real process: answers on loopback, and SIGTERM finishes with a
    checkpoint that holds every acknowledged write."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(5))
    eng.close()
    keys = tmp_path / "keys"
    keys.write_text(f"admin {ADMIN}\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("CHRONO_API_KEYS", "CHRONO_READ_KEYS")}
    proc = subprocess.Popen([sys.executable, "-m", "chrono_engine.cli", "serve", str(tmp_path / "s"), "--port",
                             str(port), "--keys-file", str(keys), "--threads", "1"], env=env,
                            cwd=str(tmp_path),  # not the checkout: the installed package, as a user runs it
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/livez", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
            ids = c.post("/v1/collections/s/ingest", json={"rows": _rows(3, seed=4, start=50)}).json()["ids"]
            assert ids == [5, 6, 7]
            assert c.post("/v1/collections/s/search", json={"vector": [1.0] * DIM, "k": 2}).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        log = proc.stderr.read().decode()
        assert ADMIN not in log  # keys never logged
        # the start-up line: the store, where it listens, the keys' source and counts, the limits
        start = next(x for x in log.splitlines() if x.startswith("chrono serve: "))
        assert f"s (5 items) on http://127.0.0.1:{port}" in start, start
        assert f"keys from {keys}: 1 admin, 0 read" in start and "max_body=16777216" in start, start
        lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]  # JSON-lines request log
        assert {"method": "POST", "endpoint": "/v1/collections/{c}/ingest", "status": 200} in [
            {k: x.get(k) for k in ("method", "endpoint", "status")} for x in lines]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    again = ce.Engine.open(tmp_path / "s", read_only=True)
    assert len(again) == 8


def test_query_score_and_verify(served):
    srv, eng, _ = served
    with _client(srv, READ) as c:
        # query needs a text embedder: without one, a 409 naming it
        r = c.post(f"{C}/query", json={"text": "policy as of March 2024"})
        assert r.status_code == 409 and r.json()["error"] == "embedder"
        eng.embedder = lambda text: np.ones(DIM, np.float32)
        try:
            r = c.post(f"{C}/query", json={"text": "policy as of 2024-03-15", "k": 3, "now": "2026-01-01"})
            assert r.status_code == 200, r.text
            want = eng.query("policy as of 2024-03-15", 3, now="2026-01-01")
            assert [h["id"] for h in r.json()["hits"]] == want.hits.column("id").to_pylist()
            assert r.json()["intent"]["mode"] == want.intent.mode
            # Engine.query's own arguments pass through and are checked by it
            body = {"text": "what changed from 2020 to 2024", "k": 3, "now": "2026-01-01", "distinct": False,
                    "undated": "include", "window_fit": 365.0, "embed_text": "cleaned"}
            r = c.post(f"{C}/query", json=body)
            assert r.status_code == 200, r.text
            want = eng.query(body["text"], 3, now="2026-01-01", distinct=False, undated="include",
                             window_fit=365.0, embed_text="cleaned")
            assert [h["id"] for h in r.json()["hits"]] == want.hits.column("id").to_pylist()
            body = {"text": "what changed from 2020 to 2024", "k": 3, "now": "2026-01-01", "window_fit": None}
            r = c.post(f"{C}/query", json=body)  # null: the window fit off
            assert r.status_code == 200, r.text
            want = eng.query(body["text"], 3, now="2026-01-01", window_fit=None)
            assert [h["id"] for h in r.json()["hits"]] == want.hits.column("id").to_pylist()
            for bad in ({"undated": "never"}, {"window_fit": -1}, {"distinct": "yes"}, {"embed_text": 3}):
                r = c.post(f"{C}/query", json={"text": "what changed from 2020 to 2024", **bad})
                assert r.status_code == 422, (bad, r.text)
        finally:
            eng.embedder = None
        cand = {"similarity": [0.9, 0.5, 0.7], "valid_from": ["2024-01-01", "2025-06-01", "2023-01-01"]}
        r = c.post(f"{C}/score", json={"candidates": cand, "as_of": "2025-01-01", "future": "penalize"})
        assert r.status_code == 200, r.text
        want = ce.score(cand, as_of="2025-01-01", policy=ce.ScoringPolicy(decay=eng.decay, future="penalize"))
        np.testing.assert_allclose(r.json()["score"], want.column("score").to_pylist(), rtol=1e-6)
        assert c.post(f"{C}/score", json={"candidates": cand, "as_of": "2025-01-01", "nope": 1}).status_code == 422
        chains = [[[0, 1], [2]], [[3]]]
        r = c.post(f"{C}/verify", json={"chains": chains, "at": "2025-01-01", "gamma": 0.5})
        assert r.status_code == 200, r.text
        want = ce.verify_chains(chains, (eng, "2025-01-01"), 0.5)
        assert [x["satisfied"] for x in r.json()["chains"]] == want.column("satisfied").to_pylist()
        for bad in ({"chains": [[["a"]]], "at": "2025-01-01", "gamma": 0.5},
                    {"chains": chains, "at": "2025-01-01", "gamma": True},
                    {"chains": [[[10**6]]], "at": "2025-01-01", "gamma": 0.5}):
            r = c.post(f"{C}/verify", json=bad)
            assert 400 <= r.status_code < 500, r.text


def test_snapshots_create_list_restore(served):
    srv, eng, path = served
    with _client(srv) as c:
        r = c.post(f"{C}/snapshots", json={"name": "before-writes"})
        assert r.status_code == 200, r.text
        assert r.json()["items"] == 60
        assert c.post(f"{C}/snapshots", json={"name": "before-writes"}).status_code == 409  # exists
        ids = c.post(f"{C}/ingest", json={"rows": _rows(5, seed=3, start=200)}).json()["ids"]
        assert c.post(f"{C}/retract", json={"ids": [1]}).status_code == 200
        auto = c.post(f"{C}/snapshots")  # no body: named by the time
        assert auto.status_code == 200 and auto.json()["items"] == 65
        names = [s["name"] for s in c.get(f"{C}/snapshots").json()["snapshots"]]
        assert "before-writes" in names and auto.json()["name"] in names
        q = {"vector": [1.0] * DIM, "k": 20, "mode": "all"}
        r = c.post(f"{C}/snapshots/before-writes/restore")
        assert r.status_code == 200, r.text
        assert r.json()["items"] == 60
        after = c.get(C).json()
        assert after["items"] == 60
        got = {h["id"] for h in c.post(f"{C}/search", json=q).json()["hits"]}
        assert not got & set(ids)  # the rows ingested after the snapshot are gone
        # the state before the restore was kept as a snapshot of its own, and can come back
        pre = r.json()["before"]
        assert pre in [s["name"] for s in c.get(f"{C}/snapshots").json()["snapshots"]]
        # the restored store takes writes, and they are durable
        assert c.post(f"{C}/ingest", json={"rows": _rows(2, seed=4, start=300)}).json()["ids"] == [60, 61]
        r = c.post(f"{C}/snapshots/{pre}/restore")
        assert r.status_code == 200 and r.json()["items"] == 65
    srv.stop()
    again = ce.Engine.open(path, read_only=True)
    assert len(again) == 65


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "x" * 65, "", " sp", "ü"])
def test_snapshot_names_are_checked(served, name):
    srv, eng, path = served
    with _client(srv) as c:
        r = c.post(f"{C}/snapshots", json={"name": name})
        assert r.status_code == 422 and "name" in r.text
        assert c.post(f"{C}/snapshots", json={"name": 7}).status_code == 422
        r = c.post(f"{C}/snapshots/{name or 'nope'}/restore")
        assert r.status_code in (404, 422)
    assert not (path.parent / "x").exists() and len(eng) == 60


def test_snapshots_are_real_folders_never_links(served, tmp_path):
    """An entry of the snapshots folder that was a symbolic link to any store elsewhere was
    listed, and restoring it replaced the live store with that store. Entries, and the
    snapshot folder each one's seal names, must be folders, not links: listing skips the
    others and restore refuses them (422 naming why), the store unchanged; a snapshot is
    never written through a link either."""
    import os
    srv, eng, path = served
    other = ce.Engine.create(tmp_path / "elsewhere", DIM, threads=1)
    other.ingest(_rows(3, seed=8))
    other.close()
    snaps = path.parent / (path.name + ".snapshots")
    with _client(srv) as c:
        assert c.post(f"{C}/snapshots", json={"name": "real"}).status_code == 200
        (snaps / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
        inner = snaps / "inner"  # a real folder whose live snapshot is a link to the other store's
        inner.mkdir()
        live = json.loads((tmp_path / "elsewhere" / "CURRENT").read_text())["snapshot"]
        (inner / "CURRENT").write_bytes((tmp_path / "elsewhere" / "CURRENT").read_bytes())
        (inner / live).symlink_to(tmp_path / "elsewhere" / live, target_is_directory=True)
        seal = snaps / "seal"  # its seal a link to the other store's
        seal.mkdir()
        (seal / "CURRENT").symlink_to(tmp_path / "elsewhere" / "CURRENT")
        (seal / live).symlink_to(tmp_path / "elsewhere" / live, target_is_directory=True)
        names = [s["name"] for s in c.get(f"{C}/snapshots").json()["snapshots"]]
        assert names == ["real"], names
        for name, words in (("linked", "it is a symbolic link"), ("inner", f"{live} is a symbolic link"),
                            ("seal", "not a store")):
            r = c.post(f"{C}/snapshots/{name}/restore")
            assert r.status_code == 422 and r.json()["error"] == "snapshot", (name, r.text)
            assert words in r.json()["message"], (name, r.text)
        assert c.post(f"{C}/snapshots/nothing/restore").status_code == 404
        assert c.get(C).json()["items"] == 60 and len(eng) == 60
        (snaps / "dangling").symlink_to(tmp_path / "written-through")
        r = c.post(f"{C}/snapshots", json={"name": "dangling"})
        assert r.status_code == 409, r.text
        assert not (tmp_path / "written-through").exists()
        assert c.post(f"{C}/snapshots/real/restore").status_code == 200
    assert os.path.islink(snaps / "linked") and len(eng) == 60


def test_snapshot_roles(served):
    srv, eng, _ = served
    with _client(srv) as c:
        assert c.post(f"{C}/snapshots", json={"name": "one"}).status_code == 200
    with _client(srv, READ) as c:
        assert c.get(f"{C}/snapshots").status_code == 200
        assert c.post(f"{C}/snapshots", json={"name": "two"}).status_code == 403
        assert c.post(f"{C}/snapshots/one/restore").status_code == 403
    with _client(srv, None) as c:
        assert c.get(f"{C}/snapshots").status_code == 401


def _reference_hits(table):
    """The JSON a search answer must carry, built the slow, obvious way."""
    out = []
    for row in table.to_pylist():
        out.append({k: (v.isoformat() if hasattr(v, "isoformat") else
                        None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()})
    return out


def test_single_search_json_and_arrow_equal_the_engine(served):
    srv, eng, _ = served
    q = np.random.default_rng(8).normal(size=(6, DIM)).astype(np.float32)
    with _client(srv, READ) as c:
        for i, (mode, kw) in enumerate([("as_of", {"as_of": "2024-06-15"}), ("latest", {}), ("all", {}),
                                        ("window", {"window": ["2024-02-01", "2024-05-01"]}),
                                        ("as_of", {"as_of": "2024-03-01T12:30:00.000250Z", "explain": True}),
                                        ("latest", {"fusion": "linear", "alpha": 0.3})]):
            body = {"vector": q[i].tolist(), "k": 7, "mode": mode, **kw}
            want = eng.search(q[i], 7, mode=mode, **{k: tuple(v) if isinstance(v, list) else v
                                                     for k, v in kw.items()})
            r = c.post(f"{C}/search", json=body)
            assert r.status_code == 200, r.text
            assert r.json()["hits"] == _reference_hits(want)
            r = c.post(f"{C}/search", json=body, headers={"Accept": ARROW})
            assert r.status_code == 200 and r.headers["content-type"] == ARROW
            assert ipc.open_stream(pa.py_buffer(r.content)).read_all().equals(want)


@pytest.mark.parametrize("opts", [{"mode": "all", "explain": True}, {"mode": "as_of", "as_of": "2024-05-02"},
                                  {"mode": "latest", "lang": "zh", "verify": 0.5}])
def test_group_bodies_equal_per_call_answers(opts):
    from chrono_engine.serve.encode import group_bodies as _group_bodies
    eng = ce.Engine(dim=DIM)
    rows = _rows(80, seed=3)
    rows[3]["title"] = None
    rows[5]["valid_to"] = "2024-07-01T00:00:00.5Z"
    eng.ingest(rows)
    q = np.random.default_rng(4).normal(size=(9, DIM)).astype(np.float32)
    prepared = [eng.prepare_search(v, 6, **opts) for v in q]
    table = eng.search_prepared(prepared, lambda answer, calls: [answer])[0]
    columns = eng.search_prepared(prepared, lambda answer, calls: [answer], form="columns")[0]
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


@pytest.mark.parametrize("n", [0, 3, 64, 65, 700])
def test_iso_timestamps_equal_datetime_isoformat(n):
    from chrono_engine.serve.encode import iso_utc as _iso_utc
    rng = np.random.default_rng(n)
    lo, hi = -62135596800 * 10**6, 253402300799 * 10**6  # years 1 .. 9999
    us = rng.integers(lo, hi, n)
    us[::2] = us[::2] // 10**6 * 10**6  # whole seconds print without microseconds
    if n:
        us[0], us[-1] = lo, hi + 999_999
    mask = rng.random(n) < 0.2
    col = pa.array(us, pa.timestamp("us", tz="UTC"), mask=mask)
    want = [None if m else x.isoformat() for x, m in zip(pa.array(np.where(mask, 0, us), col.type).to_pylist(), mask)]
    assert _iso_utc(col) == want
    assert _iso_utc(pa.chunked_array([col.slice(0, n // 2), col.slice(n // 2)])) == want
    if n:
        assert _iso_utc(col.slice(1)) == want[1:]
    # beyond datetime's years: NumPy's form, never an error
    far = pa.array([2**62, 0], pa.timestamp("us", tz="UTC"))
    assert _iso_utc(far) == [np.datetime_as_string(np.datetime64(2**62, "us")) + "+00:00",
                             "1970-01-01T00:00:00+00:00"]


@pytest.mark.slow
def test_request_log_and_metrics_histogram(tmp_path):
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(20))
    log = io.StringIO()
    srv = Server(make_app(eng, name="s", keys=Keys([ADMIN.encode()], []), log=log))
    try:
        with _client(srv) as c:
            for i in range(7):
                assert c.post(f"{C}/search", json={"vector": [1.0] * DIM, "k": 3}).status_code == 200
            assert c.post(f"{C}/search", json={"vector": [1.0] * DIM, "k": 0}).status_code == 422
            text = c.get("/metrics").text
            # the lines are written in batches: these without a shutdown, by the batch's timer
            deadline = time.monotonic() + 10
            while log.getvalue().count("\n") < 8 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert log.getvalue().count("\n") >= 8
    finally:
        srv.stop()
        eng.close()
    lines = [json.loads(x) for x in log.getvalue().splitlines()]
    searches = [x for x in lines if x["endpoint"] == C.replace("/s", "/{c}") + "/search"]
    assert [x["status"] for x in searches] == [200] * 7 + [422]
    for x in searches:
        assert x["method"] == "POST" and x["ms"] >= 0 and x["ts"].endswith("+00:00")
        assert ADMIN not in json.dumps(x)
    ep = '/v1/collections/{c}/search'
    buckets = [(float(m.split('le="')[1].split('"')[0]), int(m.rsplit(" ", 1)[1])) for m in text.splitlines()
               if m.startswith(f'chrono_request_seconds_bucket{{endpoint="{ep}"')]
    counts = [n for _, n in buckets]
    assert counts == sorted(counts) and counts[-1] == 8  # cumulative, +Inf holds every request
    slowest = max(x["ms"] for x in searches) / 1e3
    assert all(n == 8 for le, n in buckets if le >= slowest * 1.001)  # every request under its bound
    assert f'chrono_request_seconds_count{{endpoint="{ep}"}} 8' in text
    assert f'chrono_requests_total{{endpoint="{ep}",status="422"}} 1' in text


def test_a_search_the_engine_refuses_fails_alone_over_http():
    """Under ip, a query whose similarity overflows float32 gets a 422, alone (run on the
    event loop) or among concurrent requests (a group on the worker); the requests grouped
    with it still get their answers."""
    e = ce.Engine(dim=2, metric="ip", threads=1)
    e.ingest({"vector": [[1e20, 0.0], [0.0, 1.0]], "valid_from": ["2024-01-01"] * 2})
    srv = Server(make_app(e, name="s", allow_anonymous=True, log=False))
    ok, bad = {"vector": [0.0, 1.0], "k": 1, "mode": "all"}, {"vector": [1e20, 0.0], "k": 1, "mode": "all"}

    def answer(r):
        return r.json()["hits"][0]["id"] if r.status_code == 200 else (r.status_code, "overflows" in r.text)
    try:
        with _client(srv, None) as c:
            assert answer(c.post(f"{C}/search", json=bad)) == (422, True)
            assert answer(c.post(f"{C}/search", json=ok)) == 1
        out = [None] * 40

        def work(j):
            with _client(srv, None) as c:
                for i in range(j, 40, 8):
                    out[i] = answer(c.post(f"{C}/search", json=bad if i % 2 == 0 else ok))
        ts = [threading.Thread(target=work, args=(j,)) for j in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert out == [(422, True) if i % 2 == 0 else 1 for i in range(40)]
    finally:
        srv.stop()


def test_open_windows_and_unknown_fact_types(served):
    """A window with a null end (or start) is open, as in the Python API
    and in the OpenAPI document; an unknown fact type is refused naming the field."""
    srv, eng, _ = served
    q = np.random.default_rng(12).normal(size=(2, DIM)).astype(np.float32)
    with _client(srv, READ) as c:
        for window in (["2024-03-01", None], [None, "2024-05-01"], [None, None]):
            body = {"vector": q[0].tolist(), "k": 5, "mode": "window", "window": window, "as_of": "2024-06-01"}
            r = c.post(f"{C}/search", json=body)
            assert r.status_code == 200, r.text
            want = eng.search(q[0], 5, mode="window", window=tuple(window), as_of="2024-06-01")
            assert r.json()["hits"] == _reference_hits(want)
            r = c.post(f"{C}/search/batch", json={**{k: v for k, v in body.items() if k != "vector"},
                                                  "vectors": q.tolist()})
            assert r.status_code == 200, r.text
            want = eng.search_batch(q, 5, mode="window", window=tuple(window), as_of="2024-06-01")
            assert [h["id"] for h in r.json()["hits"]] == want.column("id").to_pylist()
        for path, body in (("/search", {"vector": q[0].tolist()}), ("/search/batch", {"vectors": q.tolist()})):
            r = c.post(f"{C}{path}", json={**body, "fact_types": ["nope"]})
            assert r.status_code == 422, r.text
            assert r.json()["error"] == "QueryError" and r.json()["message"].startswith("fact_types:")
            assert "'nope'" in r.json()["message"] and "known: 'general'" in r.json()["message"]
        eng.embedder = lambda text: np.ones(DIM, np.float32)
        try:
            r = c.post(f"{C}/query", json={"text": "policy now", "fact_types": ["nope"]})
            assert r.status_code == 422 and "'nope'" in r.json()["message"], r.text
        finally:
            eng.embedder = None
        spec = c.get("/openapi.json").json()["paths"]
        for path in ("/v1/collections/{c}/search", "/v1/collections/{c}/search/batch"):
            props = spec[path]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
            assert props["window"]["items"]["type"] == ["string", "null"], path
            assert props["fact_types"]["items"]["type"] == "string", path


# ----------------------------------------------------------------------------- native JSON

def test_json_rows_writes_what_python_writes():
    """``_core.json_rows``: numbers read back as the same doubles (float32 widened), UTC
    timestamps as ``datetime.isoformat()`` from year 1 to 9999, strings escaped (bytes
    that are not UTF-8 become U+FFFD), nulls by validity; refusals name what is wrong."""
    import datetime as dt

    from chrono_engine import _core
    rng = np.random.default_rng(7)
    n = 2000
    us = rng.integers(-62135596800000000, 253402300799999999, n)
    us[:4] = [-62135596800000000, 253402300799999999, 0, 951782400000000]  # edges, 2000-02-29
    f32 = rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-20, 20, n).astype(np.float32)
    f64 = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    f64[:5] = [np.nan, np.inf, -np.inf, 0.0, 1e16]
    ints = rng.integers(-2**63, 2**63 - 1, n)
    texts = ["", "a\"b\\c", "\x00\x1f\x7f", "中文\u2028😀", "\ud7ff\ue000"] * (n // 5)
    data = b"".join(t.encode() for t in texts)
    offs = np.concatenate([[0], np.cumsum([len(t.encode()) for t in texts])]).astype(np.int32)
    valid = rng.random(n) < 0.9
    cols = [("t", "tsu:UTC", us, valid), ("f", "f", f32, None), ("g", "g", f64, None), ("l", "l", ints, None),
            ("b", "b", rng.random(n) < 0.5, None), ("u", "u", (offs, np.frombuffer(data, np.uint8)), None)]
    starts = np.array([0, 0, 7, 1000, n], np.int64)
    bodies = _core.json_rows(cols, starts, "hits")
    assert [len(json.loads(b)["hits"]) for b in bodies] == [0, 7, 993, 1000]
    hits = [h for b in bodies for h in json.loads(b)["hits"]]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    for i, h in enumerate(hits):
        assert list(h) == ["t", "f", "g", "l", "b", "u"]
        want_t = (epoch + dt.timedelta(microseconds=int(us[i]))).isoformat() if valid[i] else None
        assert h["t"] == want_t
        assert h["f"] == float(f32[i]) and type(h["f"]) is float
        assert h["g"] == (float(f64[i]) if np.isfinite(f64[i]) else None)
        assert h["l"] == int(ints[i]) and h["b"] == bool(cols[4][2][i]) and h["u"] == texts[i]
    bad = _core.json_rows([("u", "u", (np.array([0, 2, 5], np.int32), np.frombuffer(b"a\xff\xc3\xa9\xed", np.uint8)), None)],
                          np.array([0, 2], np.int64), "k")
    assert json.loads(bad[0]) == {"k": [{"u": "a\ufffd"}, {"u": "é\ufffd"}]}
    for cols_, starts_, what in (
            ([("x", "i", np.array([1, 2], np.int64), None)], [0, 2], "'x'"),
            ([("x", "tsu:Europe/Paris", np.array([1, 2], np.int64), None)], [0, 2], "UTC"),
            ([("x", "?", np.array([1, 2], np.int32), None)], [0, 2], "unsupported"),
            ([("x", "i", np.array([1, 2], np.int32), None)], [0, 3], "'x' must hold"),
            ([("x", "i", np.array([1, 2], np.int32), None)], [1, 2], "begin at 0"),
            ([("x", "i", np.array([1, 2], np.int32), None)], [0, 2, 1], "ascending"),
            ([("x", "i")], [0, 2], "each column")):
        with pytest.raises(ValueError, match=what):
            _core.json_rows(cols_, np.array(starts_, np.int64), "hits")


def test_the_search_fast_path_answers_as_the_routes_do():
    """``POST .../search`` skips Starlette's routing: driven as raw ASGI, a client gone
    before its body ends gets a 400, a body past the limit a 413, a missing key a 401,
    both without a search; another collection's path and other methods still reach the
    routes (404, 405); and every request is counted in /metrics."""
    import asyncio

    eng = ce.Engine(DIM)
    eng.ingest(_rows(20))
    app = make_app(eng, name="s", keys=Keys([ADMIN.encode()], [READ.encode()]), limits=Limits(max_body=5_000),
                   log=False)

    def call(path, method="POST", messages=(), headers=()):
        sent, inbox = [], list(messages)

        async def receive():
            return inbox.pop(0) if inbox else {"type": "http.disconnect"}

        async def send(m):
            sent.append(m)
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": [(k.encode(), v.encode()) for k, v in headers], "client": ("127.0.0.1", 1),
                 "server": ("127.0.0.1", 2)}
        asyncio.run(app(scope, receive, send))
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    auth = [("authorization", f"Bearer {READ}")]
    body = json.dumps({"vector": [1.0] * DIM, "k": 3}).encode()
    status, out = call(f"{C}/search", messages=[{"type": "http.request", "body": body, "more_body": False}],
                       headers=auth)
    assert status == 200 and len(json.loads(out)["hits"]) == 3
    status, out = call(f"{C}/search", messages=[{"type": "http.request", "body": body[:10], "more_body": True}],
                       headers=auth)
    assert status == 400 and json.loads(out)["error"] == "body"
    status, out = call(f"{C}/search", headers=auth + [("content-length", "9000")])
    assert status == 413 and json.loads(out)["error"] == "body"
    status, out = call(f"{C}/search", messages=[{"type": "http.request", "body": b"x" * 3000, "more_body": True},
                                                {"type": "http.request", "body": b"x" * 3000, "more_body": False}],
                       headers=auth)
    assert status == 413
    status, out = call(f"{C}/search", messages=[{"type": "http.request", "body": body, "more_body": False}])
    assert status == 401 and json.loads(out)["error"] == "authorization"
    status, out = call(f"{C}/search", messages=[{"type": "http.request", "body": b"[1]", "more_body": False}],
                       headers=[("x-api-key", ADMIN)])
    assert status == 400 and json.loads(out)["message"] == "body must be a JSON object"
    status, _ = call("/v1/collections/other/search", messages=[{"type": "http.request", "body": body}], headers=auth)
    assert status == 404
    status, _ = call(f"{C}/search", method="GET", headers=auth)
    assert status == 405
    status, text = call("/metrics", method="GET", headers=auth)
    assert status == 200
    ep = "/v1/collections/{c}/search"
    for code, n in ((200, 1), (400, 2), (413, 2), (401, 1)):
        assert f'chrono_requests_total{{endpoint="{ep}",status="{code}"}} {n}' in text.decode()


# ----------------------------------------------------------------------------- read replicas

def _wait_for(fn, what, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not fn():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.slow
def test_read_replica_refuses_writes_and_follows_its_writer(tmp_path):
    """A read replica (``read_only``, ``refresh``) beside the store's writer, over HTTP: every
    write endpoint is refused (401 / 403 authorization / 403 read_only) with nothing changed;
    reads answer as the replica's engine; writes the writer logs, and its checkpoints, are
    served after a refresh, with the writer's own answers."""
    path = tmp_path / "s"
    writer = ce.Engine.create(path, DIM, threads=1)
    writer.ingest(_rows(60))
    replica = ce.Engine.open(path, read_only=True, threads=1)  # no lock: beside the writer
    keys = Keys([ADMIN.encode()], [READ.encode()])
    app = make_app(replica, name="s", keys=keys, log=False, read_only=True, refresh=(path, 0.05))
    srv = Server(app)
    try:
        writes = [("/ingest", {"rows": _rows(1, start=70)}), ("/retract", {"ids": [3]}),
                  ("/deprecate", {"ids": [4]}), ("/snapshots", {}), ("/snapshots/x/restore", {}),
                  ("/supersede", {"stem_id": "s1", "rows": [{"vector": [1.0] * DIM}], "effective_at": "2025-06-01",
                                  "version": "2"})]
        for p, body in writes:
            for key, status, field in ((None, 401, "authorization"), (READ, 403, "authorization"),
                                       (ADMIN, 403, "read_only")):
                with _client(srv, key) as c:
                    r = c.post(C + p, json=body)
                assert (r.status_code, r.json()["error"]) == (status, field), (p, key, r.text)
        assert len(writer) == 60 and len(app.state.engine()) == 60 and writer.history("s1").num_rows == 6
        q = np.random.default_rng(3).normal(size=DIM).astype(np.float32)
        with _client(srv, READ) as c:
            def hits():
                r = c.post(f"{C}/search", json={"vector": q.tolist(), "k": 5})
                assert r.status_code == 200, r.text
                return [h["id"] for h in r.json()["hits"]]
            assert hits() == replica.search(q, 5).column("id").to_pylist()
            writer.ingest(_rows(5, seed=9, start=60))  # logged, not checkpointed
            _wait_for(lambda: c.get(C).json()["items"] == 65, "the logged writes")
            writer.retract([0, 1])
            writer.save()  # a checkpoint: a new live snapshot
            writer.ingest(_rows(1, seed=11, start=65))
            _wait_for(lambda: c.get(C).json()["items"] == 66, "the checkpoint and the write after it")
            _wait_for(lambda: hits() == writer.search(q, 5).column("id").to_pylist(), "the writer's answers")
        assert app.state.refreshes() >= 2
    finally:
        srv.stop()
        writer.close()


def test_read_replica_settings_are_checked(tmp_path):
    from chrono_engine import cli
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(3))
    for kw in ({"refresh": (tmp_path / "s", 1.0)}, {"read_only": True, "refresh": (tmp_path / "s", 0.0)},
               {"read_only": True, "refresh": (tmp_path / "s", float("nan"))},
               {"read_only": True, "refresh": (tmp_path / "s", "soon")}, {"read_only": True, "refresh": (tmp_path / "s",)}):
        with pytest.raises(ConfigError, match="refresh"):
            make_app(eng, name="s", allow_anonymous=True, log=False, **kw)
    eng.close()
    for bad in ("0", "-1", "nan", "soon", "86401"):
        with pytest.raises(SystemExit) as e:
            cli.main(["serve", str(tmp_path / "s"), "--no-auth", "--read-only", "--refresh", bad])
        assert e.value.code == 2
    assert cli.main(["serve", str(tmp_path / "s"), "--no-auth", "--refresh", "1"]) == cli.EXIT_REFUSED


# ----------------------------------------------------------------------------- metadata, where, scoped keys

ACME_READ, ACME_ADMIN, GLOBEX_READ = "acme-read-0123456789", "acme-admin-0123456789", "globex-read-0123456789"
ACME, GLOBEX = {"tenant": "acme"}, {"tenant": "globex"}


def _tenant_rows(n=40, seed=2):
    """Rows of two tenants (even i: acme, odd: globex) with metadata of every kind (nulls
    among them), and stems: 'a' (acme: rows 0 and 2, versions 1 and 2), 'g' (globex: row 1)
    and 'mixed' (row 4 acme, version 1; row 5 globex, version 2)."""
    rng = np.random.default_rng(seed)
    stems = {0: ("a", "1"), 2: ("a", "2"), 1: ("g", "1"), 4: ("mixed", "1"), 5: ("mixed", "2")}
    return [{"vector": rng.normal(size=DIM).astype(np.float32).tolist(),
             "valid_from": f"2024-{1 + i % 12:02d}-01", "title": f"doc {i}",
             "stem_id": stems.get(i, (None,))[0], "version": stems.get(i, (None, None))[1],
             "tenant": "acme" if i % 2 == 0 else "globex", "acl": [["hr"], ["eng", "all"], []][i % 3],
             "published": None if i % 5 == 0 else f"2023-{1 + i % 12:02d}-0{1 + i % 9}T10:00:00.25Z",
             "n": None if i % 7 == 0 else i, "weight": i / 4, "flag": i % 3 == 0} for i in range(n)]


@pytest.fixture
def tenants(tmp_path):
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1, metadata={"published": "timestamp"})
    eng.ingest(_tenant_rows())
    keys = Keys([ADMIN.encode(), ACME_ADMIN.encode()], [READ.encode(), ACME_READ.encode(), GLOBEX_READ.encode()],
                scopes={ACME_ADMIN.encode(): ACME, ACME_READ.encode(): ACME, GLOBEX_READ.encode(): GLOBEX})
    srv = Server(make_app(eng, name="s", keys=keys, limits=Limits(max_body=200_000, max_batch=16, max_rows=50,
                                                                  max_k=50), log=False))
    yield srv, eng
    if srv.thread.is_alive():
        srv.stop()
    eng.close()


def test_search_bodies_take_where_and_columns(tenants):
    """where and columns in every search body, as Engine.search takes them; the hits carry
    the metadata columns after their own, in JSON as Python writes them (strings, numbers,
    booleans, lists of strings, timestamps as ISO 8601 UTC, null), and in Arrow."""
    srv, eng = tenants
    q = np.random.default_rng(3).normal(size=(3, DIM)).astype(np.float32)
    where = {"$or": [{"tenant": "globex", "n": {"$gte": 9}}, {"acl": {"$in": ["hr"]}}]}
    with _client(srv, READ) as c:
        for body, kw in (({"where": where}, {"where": where}), ({"where": where, "columns": ["published", "acl"]},
                                                                 {"where": where, "columns": ["published", "acl"]}),
                         ({"columns": []}, {"columns": []})):
            want = eng.search(q[0], 8, mode="all", **kw)
            r = c.post(f"{C}/search", json={"vector": q[0].tolist(), "k": 8, "mode": "all", **body})
            assert r.status_code == 200, r.text
            assert r.json()["hits"] == _reference_hits(want)
            r = c.post(f"{C}/search", json={"vector": q[0].tolist(), "k": 8, "mode": "all", **body},
                       headers={"Accept": ARROW})
            assert ipc.open_stream(pa.py_buffer(r.content)).read_all().equals(want)
            want = eng.search_batch(q, 8, mode="all", **kw)
            r = c.post(f"{C}/search/batch", json={"vectors": q.tolist(), "k": 8, "mode": "all", **body})
            assert r.status_code == 200, r.text
            assert r.json()["hits"] == _reference_hits(want)
        from test_where import random_filter
        schema = {"tenant": "tenant", "acl": "acl", "n": "int", "weight": "float", "flag": "bool", "published": "ts"}
        rng = np.random.default_rng(21)
        for i in range(30):  # random filters of every kind, through the fast path
            where = random_filter(schema, rng)
            want = eng.search(q[i % 3], 10, mode="all", where=where)
            r = c.post(f"{C}/search", json={"vector": q[i % 3].tolist(), "k": 10, "mode": "all", "where": where})
            assert r.status_code == 200, (where, r.text)
            assert r.json()["hits"] == _reference_hits(want), where
        hits = c.post(f"{C}/search", json={"vector": q[1].tolist(), "k": 40, "mode": "all",
                                           "arbitrate": False}).json()["hits"]
        assert len(hits) == 40 and list(hits[0])[-6:] == ["published", "tenant", "acl", "n", "weight", "flag"]
        one = next(h for h in hits if h["id"] == 1)
        assert (one["tenant"], one["acl"], one["published"], one["n"], one["weight"], one["flag"]) == \
            ("globex", ["eng", "all"], "2023-02-02T10:00:00.250000+00:00", 1, 0.25, False)
        zero = next(h for h in hits if h["id"] == 0)
        assert (zero["published"], zero["n"], zero["acl"]) == (None, None, ["hr"])
        eng.embedder = lambda text: np.ones(DIM, np.float32)
        try:
            r = c.post(f"{C}/query", json={"text": "what holds now", "k": 5, "where": GLOBEX, "columns": ["tenant"]})
            assert r.status_code == 200, r.text
            want = eng.query("what holds now", 5, where=GLOBEX, columns=["tenant"])
            assert [h["id"] for h in r.json()["hits"]] == want.hits.column("id").to_pylist()
            assert {h["tenant"] for h in r.json()["hits"]} == {"globex"} and "acl" not in r.json()["hits"][0]
        finally:
            eng.embedder = None


@pytest.mark.parametrize("where, path", [
    ({"nope": "x"}, "where.nope: unknown field"),
    ({"tenant": {"$gt": "a"}}, "where.tenant.$gt: $gt compares numbers"),
    ({"n": "one"}, "where.n.$eq: the field is a int64 column"),
    ({"flag": {"$in": [1]}}, "where.flag.$in: the field is a bool column"),
    ({"published": {"$lt": "not a time"}}, "where.published.$lt"),
    ([1, 2], "where: a filter must be a dict"),
    ("tenant", "where: a filter must be a dict"),
    ({}, "where: an empty filter"),
    ({"$and": {"tenant": "a"}}, "where.$and: takes a non-empty list"),
    ({"tenant": {"$regex": "a"}}, "where.tenant.$regex: unknown operator"),
    ({"$or": [{"tenant": "a"}, {"n": {"$in": "abc"}}]}, "where.$or[1].n.$in: takes a list of values"),
    ({"tenant": {"$eq": {"x": [1]}}}, "where.tenant.$eq: a value must be a string, number, bool or time"),
    ({"tenant": {"$in": [[1]]}}, "where.tenant.$in[0]: a value must be"),
    ({"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {
        "$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {
            "$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {"$not": {
                "tenant": "a"}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}, "nested deeper than 32 levels"),
    ({"tenant": {"$in": ["x"] * 20_000}}, "more than 10,000 terms"),
    ({"$or": [{"tenant": str(i)} for i in range(10_001)]}, "more than 10,000 terms"),
])
def test_bad_filters_are_422_naming_where_and_the_path(tenants, where, path):
    """Every search body's bad filter: a 422 whose error is "where" and whose message names
    the path to what is wrong, for a scoped key too (its own filter ANDed in); nothing runs."""
    srv, eng = tenants
    bodies = {"/search": {"vector": [1.0] * DIM}, "/search/batch": {"vectors": [[1.0] * DIM]}, "/query": {"text": "x"}}
    eng.embedder = lambda text: np.ones(DIM, np.float32)
    try:
        for key in (READ, ACME_READ):
            with _client(srv, key) as c:
                for p, body in bodies.items():
                    r = c.post(C + p, json={**body, "where": where})
                    assert r.status_code == 422, (p, r.text[:300])
                    assert r.json()["error"] == "where" and path in r.json()["message"], (p, r.text[:300])
    finally:
        eng.embedder = None


def test_columns_lists_are_counted(tenants):
    srv, eng = tenants
    with _client(srv, READ) as c:
        r = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "columns": ["tenant"] * 1025})
        assert r.status_code == 422 and r.json()["error"] == "columns" and "1024" in r.json()["message"]
        r = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "columns": ["nope"]})
        assert r.status_code == 422 and "unknown metadata column 'nope'" in r.json()["message"]
        r = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "columns": ["tenant"] * 1024, "k": 3})
        assert r.status_code == 200 and list(r.json()["hits"][0])[-1] == "tenant"


def _like_unknown(hidden, unknown, hidden_name, unknown_name):
    """Two refusals the same but for the name each was asked about: an item outside a key's
    filter answered exactly as one that does not exist."""
    def named(x):
        return repr(x) if isinstance(x, str) else str(x)
    assert hidden.status_code == unknown.status_code and hidden.status_code in (404, 422), (hidden.text, unknown.text)
    a, b = hidden.json(), unknown.json()
    assert a["error"] == b["error"], (a, b)
    assert a["message"].replace(named(hidden_name), "X") == b["message"].replace(named(unknown_name), "X"), (a, b)


def test_a_scoped_key_sees_and_changes_only_its_rows(tenants):
    """Every endpoint, with a read key and an admin key scoped to {"tenant": "acme"} over a
    store of two tenants: reads answer from acme's rows alone (a globex id or stem is
    answered as an unknown one), writes touch and write acme rows alone (403 naming the
    row otherwise), store-wide endpoints (metrics, snapshots) are refused, and globex's
    rows are exactly as they were."""
    srv, eng = tenants
    globex_ids = [i for i in range(40) if i % 2]
    before = eng.columns(globex_ids)
    n_acme, n_all = eng.count(ACME), len(eng)
    q = np.random.default_rng(4).normal(size=(3, DIM)).astype(np.float32)
    with _client(srv, ACME_READ) as c, _client(srv, ACME_ADMIN) as w, _client(srv, ADMIN) as root:
        # the collection and its info: acme's count; nothing store-wide
        assert c.get("/v1/collections").json() == {"collections": ["s"]}
        info = c.get(C).json()
        assert info["items"] == n_acme == 20 and not {"stems", "fact_types", "path"} & set(info)
        assert root.get(C).json()["items"] == n_all
        # search (the fast path), batch and query: acme's rows, the body's filter ANDed in
        for body in ({}, {"where": {"n": {"$gte": 10}}}, {"where": GLOBEX}):
            r = c.post(f"{C}/search", json={"vector": q[0].tolist(), "k": 50, "mode": "all", **body})
            assert r.status_code == 200, r.text
            want = eng.search(q[0], 50, mode="all", where={"$and": [ACME, body.get("where", ACME)]})
            assert r.json()["hits"] == _reference_hits(want)
            assert {h["tenant"] for h in r.json()["hits"]} <= {"acme"}
            r = c.post(f"{C}/search/batch", json={"vectors": q.tolist(), "k": 50, "mode": "all", **body})
            assert r.status_code == 200 and {h["tenant"] for h in r.json()["hits"]} <= {"acme"}
        every = {"vector": q[0].tolist(), "k": 50, "mode": "all", "arbitrate": False}
        assert len(c.post(f"{C}/search", json=every).json()["hits"]) == 20
        assert c.post(f"{C}/search", json={"vector": q[0].tolist(), "mode": "all", "where": GLOBEX}).json()["hits"] == []
        eng.embedder = lambda text: np.ones(DIM, np.float32)
        try:
            r = c.post(f"{C}/query", json={"text": "what holds now", "k": 30, "undated": "include"})
            assert r.status_code == 200 and r.json()["hits"]
            assert {h["tenant"] for h in r.json()["hits"]} == {"acme"}
        finally:
            eng.embedder = None
        # score reads no stored item: the same answer as any key
        cand = {"similarity": [0.9, 0.5], "valid_from": ["2024-01-01", "2025-06-01"]}
        body = {"candidates": cand, "as_of": "2025-01-01"}
        assert c.post(f"{C}/score", json=body).json() == root.post(f"{C}/score", json=body).json()
        # validity, history, verify: a globex id or stem is an unknown one
        ok = c.post(f"{C}/validity", json={"at": "2025-01-01", "ids": [0, 2]})
        np.testing.assert_allclose(ok.json()["validity"], eng.validity("2025-01-01", [0, 2]), rtol=1e-12)
        _like_unknown(c.post(f"{C}/validity", json={"at": "2025-01-01", "ids": [0, 3]}),
                      root.post(f"{C}/validity", json={"at": "2025-01-01", "ids": [0, 999]}), 3, 999)
        r = c.post(f"{C}/validity", json={"at": "2025-01-01"})
        assert r.status_code == 422 and r.json()["error"] == "ids"
        assert [x["id"] for x in c.get(f"{C}/history/a").json()["rows"]] == [0, 2]
        assert [x["id"] for x in c.get(f"{C}/history/mixed").json()["rows"]] == [4]  # its own row only
        assert [x["id"] for x in root.get(f"{C}/history/mixed").json()["rows"]] == [4, 5]
        _like_unknown(c.get(f"{C}/history/g"), root.get(f"{C}/history/nope"), "g", "nope")
        chains = {"chains": [[[0, 2], [4]]], "at": "2025-01-01", "gamma": 0.5}
        assert c.post(f"{C}/verify", json=chains).json() == root.post(f"{C}/verify", json=chains).json()
        _like_unknown(c.post(f"{C}/verify", json={**chains, "chains": [[[0, 2], [5]]]}),
                      root.post(f"{C}/verify", json={**chains, "chains": [[[0, 2], [998]]]}), 5, 998)
        # writes: a read key writes nothing; the admin key only acme's rows
        r = c.post(f"{C}/retract", json={"ids": [0]})
        assert r.status_code == 403 and r.json()["error"] == "authorization"
        _like_unknown(w.post(f"{C}/retract", json={"ids": [2, 1]}), root.post(f"{C}/retract", json={"ids": [2, 997]}),
                      1, 997)
        _like_unknown(w.post(f"{C}/deprecate", json={"ids": [3]}), root.post(f"{C}/deprecate", json={"ids": [996]}),
                      3, 996)
        sup = {"rows": [{"vector": [1.0] * DIM}], "effective_at": "2025-01-01", "version": "3"}
        _like_unknown(w.post(f"{C}/supersede", json={**sup, "stem_id": "g"}),
                      root.post(f"{C}/supersede", json={**sup, "stem_id": "nope"}), "g", "nope")
        _like_unknown(w.post(f"{C}/supersede", json={**sup, "stem_id": "mixed"}),  # it would close globex's row
                      root.post(f"{C}/supersede", json={**sup, "stem_id": "nope"}), "mixed", "nope")
        r = w.post(f"{C}/supersede", json={**sup, "stem_id": "a", "rows": [{"vector": [1.0] * DIM, "tenant": "globex"}]})
        assert r.status_code == 403 and r.json()["error"] == "rows" and "row 0" in r.json()["message"], r.text
        mine = {"vector": [0.5] * DIM, "valid_from": "2024-02-01", "tenant": "acme"}
        theirs = {"vector": [0.5] * DIM, "valid_from": "2024-02-01", "tenant": "globex"}
        for rows, bad in (([mine, theirs], 1), ([mine, {k: v for k, v in mine.items() if k != "tenant"}], 1),
                          ([{**mine, "tenant": None}], 0)):
            r = w.post(f"{C}/ingest", json={"rows": rows})
            assert r.status_code == 403 and r.json()["error"] == "rows", r.text
            assert f"row {bad}: outside where" in r.json()["message"] and "'tenant'" in r.json()["message"], r.text
        t = pa.table({"vector": pa.array([[0.5] * DIM] * 2, pa.list_(pa.float32(), DIM)),
                      "valid_from": ["2024-02-01"] * 2, "tenant": ["acme", "globex"]})
        r = w.post(f"{C}/ingest", content=_ipc(t), headers={"Content-Type": ARROW})
        assert r.status_code == 403 and "row 1" in r.json()["message"], r.text
        # a stem holding another tenant's rows takes no row of this key's (it would change which of its
        # rows every search arbitrates to); ids are the service's to draw: one of the client's could be taken
        r = w.post(f"{C}/ingest", json={"rows": [mine, {**mine, "stem_id": "g", "version": "9"}]})
        assert r.status_code == 403 and r.json()["error"] == "rows" and "row 1: stem 'g'" in r.json()["message"]
        r = w.post(f"{C}/ingest", json={"rows": [{**mine, "id": 1}]})
        assert r.status_code == 403 and r.json()["error"] == "id", r.text
        r = w.post(f"{C}/ingest", content=_ipc(t.slice(0, 1).append_column("id", pa.array([1], pa.uint64()))),
                   headers={"Content-Type": ARROW})
        assert r.status_code == 403 and r.json()["error"] == "id", r.text
        r = w.post(f"{C}/supersede", json={**sup, "stem_id": "a", "rows": [{"vector": [1.0] * DIM, "id": 3}]})
        assert r.status_code == 403 and r.json()["error"] == "id", r.text
        assert len(eng) == n_all and eng.count(ACME) == n_acme  # every refusal changed nothing
        # inside acme's rows, the writes are made, with ids drawn at random (the store's next ids
        # would count every tenant's rows)
        new = w.post(f"{C}/ingest", json={"rows": [mine, {**mine, "stem_id": "a-new", "version": "1"}]}).json()["ids"]
        r = w.post(f"{C}/ingest", content=_ipc(t.slice(0, 1)), headers={"Content-Type": ARROW})
        assert r.status_code == 200
        new += r.json()["ids"]
        r = w.post(f"{C}/supersede", json={**sup, "stem_id": "a"})
        assert r.status_code == 200, r.text
        new += r.json()["ids"]
        assert len(set(new)) == 4 and all(2**32 <= i < 2**53 for i in new), new
        assert eng.get(new).column("tenant").to_pylist() == ["acme"] * 4  # the supersede's inherited, and inside
        assert [x["id"] for x in c.get(f"{C}/history/a").json()["rows"]] == [0, 2, new[-1]]
        assert w.post(f"{C}/retract", json={"ids": [6]}).status_code == 200
        assert w.post(f"{C}/deprecate", json={"ids": [8], "effective_at": "2024-05-01"}).status_code == 200
        # store-wide endpoints: refused to a scoped key, read or admin
        for key_client in (c, w):
            for method, p in (("get", "/metrics"), ("get", f"{C}/snapshots"), ("post", f"{C}/snapshots"),
                              ("post", f"{C}/snapshots/x/restore")):
                r = getattr(key_client, method)(p)
                assert r.status_code == 403 and r.json()["error"] == "authorization", (p, r.text)
                assert "scoped" in r.json()["message"] or (key_client is c and method == "post")  # a read key
        assert root.get("/metrics").status_code == 200 and root.get(f"{C}/snapshots").status_code == 200
        assert c.get(C).json()["items"] == n_acme + 4
    after = eng.columns(globex_ids)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
    assert eng.count(GLOBEX) == 20 and len(eng) == n_all + 4


def test_concurrent_tenants_are_never_grouped_together(tenants):
    """Searches of two scoped keys at once (coalesced into planner groups on the event
    loop, grouped by the prepared call's key, which holds the filter): every answer holds
    its key's rows alone and equals that search made alone."""
    srv, eng = tenants
    # the grouping key (the prepared call's) tells the two filters apart, and one batch of both is refused
    a, g = (eng.prepare_search([1.0] * DIM, 6, where=w) for w in (ACME, GLOBEX))
    assert a.key != g.key and eng.prepare_search([0.5] * DIM, 6, where=dict(ACME)).key == a.key
    with pytest.raises(ce.errors.QueryError):
        eng.search_prepared([a, g])
    rng = np.random.default_rng(13)
    qs = [(rng.normal(size=DIM).tolist(), ACME_READ if i % 2 else GLOBEX_READ, f"2024-{1 + i % 12:02d}-15")
          for i in range(96)]

    def body(v, t):
        return {"vector": v, "k": 6, "mode": "all", "as_of": t}
    seq = []
    for v, key, t in qs:
        with _client(srv, key) as c:
            seq.append(c.post(f"{C}/search", json=body(v, t)).json())
    got = [None] * len(qs)

    def work(j):
        clients = {k: _client(srv, k) for k in (ACME_READ, GLOBEX_READ)}
        for i in range(j, len(qs), 16):
            v, key, t = qs[i]
            got[i] = clients[key].post(f"{C}/search", json=body(v, t)).json()
        for cl in clients.values():
            cl.close()
    ts = [threading.Thread(target=work, args=(j,)) for j in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == seq
    for (v, key, t), answer in zip(qs, got):
        want = "acme" if key == ACME_READ else "globex"
        assert answer["hits"] and {h["tenant"] for h in answer["hits"]} == {want}


def test_a_scoped_key_before_its_column_exists(tmp_path):
    """A store without the tenant column yet: a scoped key's reads find nothing (a field
    the store lacks reads as null), its writes must bring the column, and once they do,
    its rows are found."""
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(6))  # no metadata at all
    keys = Keys([ACME_ADMIN.encode()], [], scopes={ACME_ADMIN.encode(): {"tenant": "acme", "acl": {"$ne": "x"}}})
    srv = Server(make_app(eng, name="s", keys=keys, log=False))
    try:
        with _client(srv, ACME_ADMIN) as c:
            assert c.post(f"{C}/search", json={"vector": [1.0] * DIM, "mode": "all"}).json()["hits"] == []
            assert c.get(C).json()["items"] == 0
            assert c.get(f"{C}/history/s1").status_code == 404
            assert c.post(f"{C}/retract", json={"ids": [0]}).status_code == 404
            r = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "where": {"dept": "x"}})
            assert r.status_code == 422 and r.json()["error"] == "where"  # the body's own filter: strict
            r = c.post(f"{C}/ingest", json={"rows": [{"vector": [1.0] * DIM, "valid_from": "2024-01-01"}]})
            assert r.status_code == 403 and "row 0" in r.json()["message"]
            r = c.post(f"{C}/ingest", json={"rows": [{"vector": [1.0] * DIM, "valid_from": "2024-01-01",
                                                      "tenant": "acme"}]})
            assert r.status_code == 200 and len(r.json()["ids"]) == 1
            hits = c.post(f"{C}/search", json={"vector": [1.0] * DIM, "mode": "all"}).json()["hits"]
            assert [h["id"] for h in hits] == r.json()["ids"] and c.get(C).json()["items"] == 1
    finally:
        srv.stop()
        eng.close()


def test_keys_file_with_filters(tmp_path, monkeypatch):
    monkeypatch.delenv("CHRONO_API_KEYS", raising=False)
    monkeypatch.delenv("CHRONO_READ_KEYS", raising=False)
    f = tmp_path / "keys"
    f.write_text('admin a-filekey-123456\n'
                 'read r-acme-123456 {"tenant": "acme"}  # acme\'s reader\n'
                 'admin a-hash-123456   {"tenant": "a#b", "acl": {"$in": ["x"]}}\n'
                 'read r-plain-123456 # no filter\n')
    k = Keys.from_env(f)
    assert k.caller(b"a-filekey-123456") == ("admin", None) and k.caller(b"r-plain-123456") == ("read", None)
    role, where = k.caller(b"r-acme-123456")
    assert role == "read" and where.spec == {"tenant": "acme"}
    assert k.caller(b"a-hash-123456").where.spec == {"tenant": "a#b", "acl": {"$in": ["x"]}}
    assert k.caller(b"nope-nope-123") is None
    import pickle  # as chrono serve --workers hands them to its worker processes
    again = pickle.loads(pickle.dumps(k))
    assert again.caller(b"r-acme-123456") == k.caller(b"r-acme-123456") and again.caller(b"nope-nope-123") is None
    for i, bad in enumerate(['read r-bad-1234567 {"tenant": }', 'read r-bad-1234567 ["tenant"]',
                             'read r-bad-1234567 {"tenant": "a"} trailing', 'read r-bad-1234567 {"t": {"$regex": 1}}',
                             'read r-bad-1234567 {}']):
        f.write_text("admin a-filekey-123456\n" + bad + "\n")
        with pytest.raises(ConfigError, match="line 2") as info:
            Keys.from_env(f)
        assert "r-bad-1234567" not in str(info.value), i  # a key is never echoed
    with pytest.raises(ConfigError, match="one of the admin or read keys"):
        Keys([b"a-key-12345678"], [], scopes={b"other-key-1234": ACME})
