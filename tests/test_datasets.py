"""The dataset loader (chrono_engine.datasets): names resolved in the data directory, and the
pinned download, tested against an HTTP server on 127.0.0.1 (no test touches the internet)."""
import doctest
import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chrono_engine import cli, datasets, tkg
from chrono_engine.errors import DataFileError, DatasetNotFoundError, DownloadError

COMMIT = "0123456789abcdef0123456789abcdef01234567"
A = b"alpha\tone\t2014-01-01\n" * 700
B = b"beta\n" * 300


def _pin(path, upstream, body):
    return datasets.RemoteFile(path, "own/repo", COMMIT, upstream, len(body), hashlib.sha256(body).hexdigest())


TINY = datasets.Dataset("tiny", "two small files", (_pin("a.txt", "data/a.txt", A),
                                                    _pin("sub/b.txt", "data/b.txt", B)))


class _Handler(BaseHTTPRequestHandler):
    """Serves server.routes[path] = (body, mode); mode "ok", "short" (the declared length,
    half the body, then the connection closes), "nolength" (no Content-Length) or "stall"
    (no answer at all: waits for server.release, then closes)."""

    def do_GET(self):
        srv = self.server
        srv.requests.append(self.path)
        if self.path not in srv.routes:
            self.send_error(404, "not here")
            return
        body, mode = srv.routes[self.path]
        if mode == "stall":  # never answers; the client has given up by the time it is released
            srv.release.wait(10)
            return
        self.send_response(200)
        if mode != "nolength":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2] if mode == "short" else body)
        self.close_connection = True

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.routes, srv.requests, srv.release = {}, [], threading.Event()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()
    thread.join(10)


@pytest.fixture
def tiny(monkeypatch, server):
    """The TINY dataset registered by name and served correctly by the local server."""
    monkeypatch.setitem(datasets.DATASETS, "tiny", TINY)
    for f, body in zip(TINY.files, (A, B)):
        server.routes[f"/own/repo/{COMMIT}/{f.path_upstream}"] = (body, "ok")
    return server


def _serve(server, f, body, mode="ok"):
    server.routes[f"/own/repo/{COMMIT}/{f.path_upstream}"] = (body, mode)


def _files_under(path: Path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


# ------------------------------------------------------------------ download
def test_download_writes_every_file_checked_and_locate_finds_it(tiny, tmp_path):
    root = datasets.download("tiny", tmp_path / "data", base_url=tiny.url)
    assert root == tmp_path / "data" / "tiny"
    assert (root / "a.txt").read_bytes() == A and (root / "sub" / "b.txt").read_bytes() == B
    assert _files_under(root) == ["a.txt", "sub", "sub/b.txt"]  # no temporary file left
    assert sorted(tiny.requests) == sorted(f"/own/repo/{COMMIT}/data/{n}" for n in ("a.txt", "b.txt"))
    assert datasets.locate("tiny", tmp_path / "data") == root
    assert datasets.is_present("tiny", tmp_path / "data")


def test_existing_complete_copy_is_not_downloaded_again(tiny, tmp_path):
    datasets.download("tiny", tmp_path, base_url=tiny.url)
    tiny.requests.clear()
    datasets.download("tiny", tmp_path, base_url=tiny.url)
    assert tiny.requests == []
    # a damaged file (same size, other bytes) is fetched again, and only that one
    (tmp_path / "tiny" / "sub" / "b.txt").write_bytes(B.replace(b"beta", b"BETA"))
    datasets.download("tiny", tmp_path, base_url=tiny.url)
    assert tiny.requests == [f"/own/repo/{COMMIT}/data/b.txt"]
    assert (tmp_path / "tiny" / "sub" / "b.txt").read_bytes() == B
    tiny.requests.clear()
    datasets.download("tiny", tmp_path, base_url=tiny.url, force=True)
    assert len(tiny.requests) == 2


@pytest.mark.parametrize("case, body, mode, message", [
    ("checksum", A[:-1] + b"!", "ok", "sha256 .* differs from the pinned"),
    ("truncated", A, "short", "truncated body"),
    ("oversized, declared", A + b"x", "ok", "declares 14,701 bytes, more than the pinned 14,700"),
    ("oversized, undeclared", A + b"x" * 5000, "nolength", "larger than the pinned"),
    ("short, undeclared", A[:100], "nolength", "truncated body, 100 of"),
])
def test_bad_body_raises_and_leaves_nothing(tiny, tmp_path, case, body, mode, message):
    _serve(tiny, TINY.files[0], body, mode)
    with pytest.raises(DownloadError, match=message) as e:
        datasets.download("tiny", tmp_path / "data", base_url=tiny.url)
    assert e.value.url.endswith("/data/a.txt") and isinstance(e.value, OSError)
    assert not (tmp_path / "data").exists()  # nor the directories it had created


def test_http_404_raises_and_leaves_nothing_even_of_files_already_received(tiny, tmp_path):
    del tiny.routes[f"/own/repo/{COMMIT}/data/b.txt"]  # a.txt arrives, b.txt is 404
    (tmp_path / "data").mkdir()
    with pytest.raises(DownloadError, match="HTTP 404"):
        datasets.download("tiny", tmp_path / "data", base_url=tiny.url)
    assert _files_under(tmp_path / "data") == []
    assert f"/own/repo/{COMMIT}/data/a.txt" in tiny.requests


def test_a_failed_download_keeps_files_that_were_already_complete(tiny, tmp_path):
    datasets.download("tiny", tmp_path, base_url=tiny.url)
    (tmp_path / "tiny" / "a.txt").unlink()
    _serve(tiny, TINY.files[0], A, "short")
    with pytest.raises(DownloadError, match="truncated"):
        datasets.download("tiny", tmp_path, base_url=tiny.url)
    assert _files_under(tmp_path / "tiny") == ["sub", "sub/b.txt"]


@pytest.mark.slow
def test_timeout_unreachable_host_and_bad_base_url(tiny, tmp_path):
    _serve(tiny, TINY.files[0], A, "stall")
    with pytest.raises(DownloadError, match=r"download failed \(.*timed out"):
        datasets.download("tiny", tmp_path / "data", base_url=tiny.url, timeout=0.2)
    assert not (tmp_path / "data").exists()
    with socket.socket() as s:  # a port nobody listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(DownloadError, match="CHRONO_DATA_DIR"):
            datasets.download("tiny", tmp_path / "data", base_url=f"http://127.0.0.1:{port}", timeout=5)
    with pytest.raises(DownloadError, match="must be http"):
        datasets.download("tiny", tmp_path / "data", base_url="file:///etc")
    with pytest.raises(DatasetNotFoundError, match="unknown dataset 'nope'; known: .*icews14"):
        datasets.download("nope", tmp_path / "data", base_url=tiny.url)


def test_base_url_and_data_dir_from_the_environment(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("CHRONO_DATA_URL", tiny.url + "/")
    monkeypatch.setenv("CHRONO_DATA_DIR", str(tmp_path / "env"))
    assert datasets.download("tiny") == tmp_path / "env" / "tiny"
    assert datasets.locate("tiny") == tmp_path / "env" / "tiny"


# ------------------------------------------------------------------ where datasets are found
def test_data_directory_order(tmp_path, monkeypatch):
    monkeypatch.setenv("CHRONO_ENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CHRONO_DATA_DIR", raising=False)
    assert datasets.data_dir() == tmp_path / "cache" / "data"  # the package's one cache
    monkeypatch.delenv("CHRONO_ENGINE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert datasets.data_dir() == tmp_path / "xdg" / "chrono_engine" / "data"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert datasets.data_dir() == tmp_path / "home" / ".cache" / "chrono_engine" / "data"
    monkeypatch.setenv("CHRONO_DATA_DIR", str(tmp_path / "env"))
    assert datasets.data_dir() == tmp_path / "env"
    assert datasets.data_dir(tmp_path / "arg") == tmp_path / "arg"


def test_missing_dataset_says_where_it_looked_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CHRONO_DATA_DIR", str(tmp_path))
    (tmp_path / "icews14").mkdir()
    (tmp_path / "icews14" / "train.txt").write_text("x\n")
    with pytest.raises(DatasetNotFoundError) as e:
        datasets.locate("icews14")
    msg = str(e.value)
    assert f"not found in {tmp_path / 'icews14'} (from CHRONO_DATA_DIR; missing valid.txt, test.txt" in msg
    assert "set CHRONO_DATA_DIR" in msg and "chrono data download icews14" in msg
    assert isinstance(e.value, DataFileError) and e.value.path == str(tmp_path / "icews14")
    assert not datasets.is_present("icews14")
    monkeypatch.delenv("CHRONO_DATA_DIR")
    monkeypatch.delenv("CHRONO_ENGINE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.raises(DatasetNotFoundError, match="from the per-user cache"):
        tkg.load("icews14")  # tkg.load resolves names through the same loader


def test_paths_are_not_names(tmp_path):
    assert datasets.locate(tmp_path / "icews14") == tmp_path / "icews14"
    assert datasets.locate("./icews14") == Path("./icews14")
    assert datasets.locate("some/dir") == Path("some/dir")


def test_tkg_load_by_name_in_a_data_dir(tmp_path, monkeypatch):
    """A names-format dataset placed under a registered name loads by that name."""
    files = {"train.txt": "A\tr1\tB\t2014-01-01\n", "valid.txt": "B\tr1\tA\t2014-01-02\n",
             "test.txt": "A\tr1\tB\t2014-01-03\n"}
    pins = tuple(datasets.RemoteFile(n, "own/repo", COMMIT, n, len(t), "0" * 64) for n, t in files.items())
    monkeypatch.setitem(datasets.DATASETS, "mini", datasets.Dataset("mini", "three facts", pins))
    (tmp_path / "mini").mkdir()
    for name, text in files.items():
        (tmp_path / "mini" / name).write_text(text)
    d = tkg.load("mini", data_dir=tmp_path)
    assert d.entities == ("A", "B") and d.test.num_rows == 1


# ------------------------------------------------------------------ the pins against real copies
@pytest.mark.parametrize("name", ["icews14", "timeqa"])
def test_real_pins_download_byte_for_byte_from_a_local_mirror(name, server, tmp_path):
    """Serve the local copy under the pinned upstream paths: every pin (size, sha256, path)
    matches the files the tests and benchmarks use, and the download reproduces them."""
    try:
        src = datasets.locate(name)
    except DatasetNotFoundError as e:
        pytest.skip(f"{name} is not available: {e}")
    spec = datasets.get(name)
    for f in spec.files:
        server.routes[f"/{f.repo}/{f.commit}/{f.path_upstream}"] = ((src / f.path).read_bytes(), "ok")
    root = datasets.download(name, tmp_path, base_url=server.url)
    for f in spec.files:
        assert (root / f.path).read_bytes() == (src / f.path).read_bytes()
    assert len(server.requests) == len(spec.files)
    if name == "icews14":
        d = tkg.load(name, data_dir=tmp_path)
        assert (d.source_format, d.n_entities, d.train.num_rows) == ("names", 7128, 63685)
        assert tkg.load(root / "xerte_ids").test.num_rows == 13222


def test_pins_are_github_commits_and_sha256():
    for spec in datasets.DATASETS.values():
        for f in spec.files:
            assert len(f.commit) == 40 and int(f.commit, 16) >= 0
            assert len(f.sha256) == 64 and int(f.sha256, 16) >= 0 and f.size > 0
            assert f.url().startswith(f"https://raw.githubusercontent.com/{f.repo}/{f.commit}/")


# ------------------------------------------------------------------ CLI and docs
def test_cli_data_download_path_list(tiny, tmp_path, capsys):
    assert cli.main(["data", "path", "tiny", "--data-dir", str(tmp_path)]) == cli.EXIT_FILE
    err = capsys.readouterr().err
    assert err.startswith("chrono data: error: dataset 'tiny' not found") and "chrono data download tiny" in err
    assert cli.main(["data", "download", "tiny", "--data-dir", str(tmp_path), "--base-url", tiny.url]) == 0
    assert "2 files checked" in capsys.readouterr().out
    assert cli.main(["data", "path", "tiny", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "tiny")
    assert cli.main(["data", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"data directory: {tmp_path}" in out
    assert any(line.split()[:2] == ["tiny", "present"] for line in out.splitlines())
    assert any(line.split()[:2] == ["icews14", "absent"] for line in out.splitlines())
    # --json, as every command takes it
    assert cli.main(["data", "list", "--data-dir", str(tmp_path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["data_dir"] == str(tmp_path)
    assert {d["name"]: d["present"] for d in got["datasets"]}["tiny"] is True
    assert {d["name"]: d["present"] for d in got["datasets"]}["icews14"] is False
    assert cli.main(["data", "path", "tiny", "--data-dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "tiny", "path": str(tmp_path / "tiny")}
    _serve(tiny, TINY.files[0], b"", "ok")
    assert cli.main(["data", "download", "tiny", "--data-dir", str(tmp_path / "x"), "--base-url", tiny.url]) \
        == cli.EXIT_FILE
    assert "truncated body" in capsys.readouterr().err
    assert cli.main(["data", "path", "nope"]) == cli.EXIT_FILE
    assert "unknown dataset 'nope'" in capsys.readouterr().err


def test_tkg_eval_defaults_to_icews14_by_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHRONO_DATA_DIR", str(tmp_path))
    assert cli.main(["tkg", "eval"]) == cli.EXIT_REFUSED
    assert "dataset 'icews14' not found" in capsys.readouterr().err


def test_docstring_examples():
    failures, tried = doctest.testmod(datasets, optionflags=doctest.ELLIPSIS)
    assert failures == 0 and tried >= 5

