"""``chrono serve --read-only --workers N`` as real processes on loopback: N worker
processes on one port answer as the engine does, refuse writes, stop gracefully on SIGTERM,
and a worker that dies stops the service with an error naming it; the settings are checked
before anything starts."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import chrono_engine as ce  # noqa: E402
from chrono_engine import cli  # noqa: E402
from chrono_engine.bench.serve_load import free_port  # noqa: E402
from chrono_engine.errors import ConfigError  # noqa: E402
from chrono_engine.serve import serve  # noqa: E402

from test_serve import ADMIN, DIM, READ, _rows  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the workers")


def _stat(pid: int | str) -> list | None:
    """The fields of /proc/PID/stat after the command (state, ppid, ...); None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _children(pid: int) -> list:
    """The live worker processes of the service ``pid`` (its children started by
    multiprocessing's spawn; not its resource tracker)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(entry)
            if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        if b"spawn_main" in f.read():
                            out.append(int(entry))
                except OSError:
                    continue
    return out


def _start(tmp_path, workers: int = 2):
    """A store of 60 rows and ``chrono serve --read-only --workers`` on it; (process, url)."""
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(60))
    eng.close()
    keys = tmp_path / "keys"
    keys.write_text(f"admin {ADMIN}\nread {READ}\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("CHRONO_API_KEYS", "CHRONO_READ_KEYS")}
    proc = subprocess.Popen([sys.executable, "-m", "chrono_engine.cli", "serve", str(tmp_path / "s"), "--port",
                             str(port), "--keys-file", str(keys), "--read-only", "--workers", str(workers)],
                            env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200 and len(_children(proc.pid)) >= workers:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the service did not start: " + proc.stderr.read().decode()[-2000:])
        time.sleep(0.1)
    return proc, url


def _stop(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_workers_answer_as_the_engine_refuse_writes_and_stop_gracefully(tmp_path):
    before = _metrics_folders()
    proc, url = _start(tmp_path, workers=2)
    try:
        workers = _children(proc.pid)
        assert len(workers) == 2
        eng = ce.Engine.open(tmp_path / "s", read_only=True, threads=1)
        rng = np.random.default_rng(5)
        asks = [(rng.normal(size=DIM).astype(np.float32), f"2024-{1 + i % 12:02d}-15") for i in range(48)]
        want = [eng.search(q, 5, mode="as_of", as_of=t).column("id").to_pylist() for q, t in asks]
        got: dict = {}
        errors: list = []

        def client(part):  # its own connection: the kernel shares connections out among the workers
            try:
                with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {READ}"}, timeout=30) as c:
                    for i in part:
                        q, t = asks[i]
                        r = c.post("/v1/collections/s/search", json={"vector": q.tolist(), "k": 5, "mode": "as_of",
                                                                     "as_of": t})
                        assert r.status_code == 200, r.text
                        got[i] = [h["id"] for h in r.json()["hits"]]
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=client, args=(range(j, len(asks), 24),)) for j in range(24)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not errors, errors
        assert [got[i] for i in range(len(asks))] == want
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
            r = c.post("/v1/collections/s/ingest", json={"rows": _rows(1, start=70)})
            assert (r.status_code, r.json()["error"]) == (403, "read_only")
            assert c.get("/v1/collections/s").json()["items"] == 60
            # /metrics sums every worker's counters (the others' as last published, <= 1 s old)
            line = 'chrono_requests_total{endpoint="/v1/collections/{c}/search",status="200"} '
            deadline = time.monotonic() + 30
            while True:
                text = c.get("/metrics").text
                got_n = [int(x[len(line):]) for x in text.splitlines() if x.startswith(line)]
                if got_n == [len(asks)]:
                    break
                assert time.monotonic() < deadline and (not got_n or got_n[0] < len(asks)), text
                time.sleep(0.2)
        eng.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(90) == 0
        assert _metrics_folders() <= before
        log = proc.stderr.read().decode()
        assert ADMIN not in log and READ not in log  # keys never logged
        lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]  # whole JSON lines
        searched = [x for x in lines if x.get("endpoint") == "/v1/collections/{c}/search"]
        # the kernel shared the 24 connections out by a hash (all to one worker: p = 2^-23)
        assert len(searched) == len(asks) and {x["worker"] for x in searched} == {0, 1}
    finally:
        _stop(proc)


def test_metrics_of_the_workers_are_summed(tmp_path):
    """_Metrics.merged: this worker's counters now plus every other published file's; a
    file that is not counters is skipped."""
    from chrono_engine.serve.metrics import Metrics as _Metrics
    a, b = _Metrics(), _Metrics()
    for m, n, secs in ((a, 3, 0.0002), (b, 5, 0.02)):
        for _ in range(n):
            m.observe("/search", 200, secs)
    b.observe("/search", 422, 0.001)
    b.publish(tmp_path, 1)
    (tmp_path / "worker-2.json").write_text("{not json")
    (tmp_path / "worker-3.json").write_text('{"count": [["/search", 200, 4], ["/search", 200, "x"]], "hist": {}}')
    a.observe("/info", 200, 0.5)  # after b published: a's own counters are read now
    text = a.merged(tmp_path, 0).text(10)
    assert 'chrono_requests_total{endpoint="/search",status="200"} 8' in text
    assert 'chrono_requests_total{endpoint="/search",status="422"} 1' in text
    assert 'chrono_requests_total{endpoint="/info",status="200"} 1' in text
    assert 'chrono_request_seconds_bucket{endpoint="/search",le="0.0005"} 3' in text
    assert 'chrono_request_seconds_bucket{endpoint="/search",le="0.025"} 9' in text
    assert 'chrono_request_seconds_count{endpoint="/search"} 9' in text
    want = sum([0.0002] * 3 + [0.02] * 5 + [0.001])
    got = float([x for x in text.splitlines() if x.startswith('chrono_request_seconds_sum{endpoint="/search"}')][0].split()[-1])
    assert abs(got - want) < 1e-6
    assert a.text(10).count("chrono_requests_total{") == 2  # a itself is unchanged


def test_metrics_files_that_are_not_regular_files_are_skipped(tmp_path):
    """A FIFO among the published counters blocked /metrics (a read of it waits for a
    writer, on the event loop); a link was followed. Both are skipped now."""
    import os
    import threading

    from chrono_engine.serve.metrics import Metrics as _Metrics
    a, b = _Metrics(), _Metrics()
    b.observe("/search", 200, 0.001)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    b.publish(elsewhere, 1)
    folder = tmp_path / "counters"
    folder.mkdir()
    os.mkfifo(folder / "worker-2.json")
    (folder / "worker-3.json").symlink_to(elsewhere / "worker-1.json")
    out = []
    t = threading.Thread(target=lambda: out.append(a.merged(folder, 0).text(0)), daemon=True)
    t.start()
    t.join(10)
    assert out, "merged() blocked on the FIFO"
    assert "/search" not in out[0]


@pytest.mark.slow
def test_a_worker_that_dies_stops_the_service_with_an_error_naming_it(tmp_path):
    proc, url = _start(tmp_path, workers=2)
    try:
        workers = _children(proc.pid)
        os.kill(workers[0], signal.SIGKILL)
        assert proc.wait(90) == cli.EXIT_REFUSED
        err = proc.stderr.read().decode()
        assert "chrono serve: error: worker" in err and "exited" in err and "-9" in err, err[-2000:]
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in workers):  # the other worker was stopped, not left behind
            assert time.monotonic() < deadline, "a worker left running"
            time.sleep(0.1)
    finally:
        _stop(proc)


def _metrics_folders() -> set:
    import tempfile
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("chrono-serve-metrics-")}


@pytest.mark.slow
def test_workers_end_with_a_supervisor_killed_outright(tmp_path):
    before = _metrics_folders()
    proc, url = _start(tmp_path, workers=2)
    try:
        assert len(_metrics_folders() - before) == 1  # the workers' counters
        workers = _children(proc.pid)
        proc.kill()  # SIGKILL: no chance to stop them itself
        proc.wait()
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in workers):
            assert time.monotonic() < deadline, "workers left serving after their supervisor died"
            time.sleep(0.1)
        assert _metrics_folders() <= before  # the last worker out removed it
    finally:
        _stop(proc)
        for p in workers:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


@pytest.mark.slow
def test_workers_settings_are_checked(tmp_path):
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(3))
    eng.close()
    with pytest.raises(ConfigError, match="--workers N serves a read replica"):
        serve(str(tmp_path / "s"), allow_anonymous=True, workers=2)
    for bad in (0, -1, 257, 2.5, "2", True):
        with pytest.raises(ConfigError, match="workers"):
            serve(str(tmp_path / "s"), allow_anonymous=True, read_only=True, workers=bad)
    for bad in ("0", "257", "two"):
        with pytest.raises(SystemExit) as e:
            cli.main(["serve", str(tmp_path / "s"), "--no-auth", "--read-only", "--workers", bad])
        assert e.value.code == 2
    assert cli.main(["serve", str(tmp_path / "s"), "--no-auth", "--workers", "2"]) == cli.EXIT_REFUSED
    env = {k: v for k, v in os.environ.items() if k not in ("CHRONO_API_KEYS", "CHRONO_READ_KEYS")}
    # no keys: refused before any worker starts
    r = subprocess.run([sys.executable, "-m", "chrono_engine.cli", "serve", str(tmp_path / "s"), "--read-only",
                        "--workers", "2", "--port", str(free_port())], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == cli.EXIT_REFUSED and "no API keys" in r.stderr
    # a store that is not there: each worker's open fails, and the service says why (a file error)
    r = subprocess.run([sys.executable, "-m", "chrono_engine.cli", "serve", str(tmp_path / "nope"), "--read-only",
                        "--no-auth", "--workers", "2", "--port", str(free_port())], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == cli.EXIT_FILE, r.stderr
    assert "nope" in r.stderr and "Traceback" not in r.stderr


def test_request_log_is_written_in_whole_lines_of_at_most_4k(tmp_path):
    """The request log's batches go out in writes of whole lines, each under 4 KiB (what a
    pipe takes whole), so workers sharing stderr never interleave mid-line."""
    from chrono_engine.serve import make_app
    from test_serve import Server

    class Stream:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass
    log = Stream()
    eng = ce.Engine.create(tmp_path / "s", DIM, threads=1)
    eng.ingest(_rows(3))
    srv = Server(make_app(eng, name="s", allow_anonymous=True, log=log, worker=3))
    try:
        with httpx.Client(base_url=srv.url) as c:
            for _ in range(300):  # past 256 pending lines: a flush of many lines at once
                assert c.get("/v1/collections/s").status_code == 200
    finally:
        srv.stop()
        eng.close()
    writes = [w for w in log.writes if w]
    assert len(writes) > 1 and all(len(w.encode()) <= 4000 and w.endswith("\n") for w in writes)
    lines = [json.loads(x) for w in writes for x in w.splitlines()]
    assert len(lines) == 300 and all(x["worker"] == 3 and x["status"] == 200 for x in lines)
