"""The `chrono` command: every sub-command end to end on a small store, exit codes, errors."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import chrono_engine as ce
from chrono_engine import cli

SUBCOMMANDS = ["demo", "info", "ingest", "search", "query", "supersede", "retract", "history", "verify",
               "plot-decay"]


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 60
    vec = rng.standard_normal((n, 8)).astype(np.float32)
    t = pa.table({"vec": [list(map(float, v)) for v in vec],
                  "valid_from": [f"2024-01-{i % 28 + 1:02d}T00:00:00" for i in range(n)],
                  "fact_type": ["news" if i % 2 else "policy" for i in range(n)],
                  "stem_id": [f"s{i}" for i in range(n)], "version": ["v1.0.0"] * n,
                  "title": [f"doc {i}" for i in range(n)]})
    pq.write_table(t, tmp_path / "in.parquet")
    csv = t.set_column(0, "vec", pa.array([json.dumps(v) for v in t.column("vec").to_pylist()]))
    pcsv.write_csv(csv, tmp_path / "in.csv")
    new = pa.table({"vector": [list(map(float, vec[0]))], "title": ["doc 0, revised"]})
    pq.write_table(new, tmp_path / "v2.parquet")
    return tmp_path, vec


def test_info(capsys):
    code, out, _ = run(capsys, "info")
    assert code == 0 and json.loads(out)["hnswlib_version"] == "0.8.0"


def test_every_subcommand_has_help(capsys):
    for name in SUBCOMMANDS:
        with pytest.raises(SystemExit) as e:
            cli.main([name, "--help"])
        assert e.value.code == 0
        assert "usage: chrono " + name in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and all(name in out for name in SUBCOMMANDS + ["bench"])


def test_ingest_search_history_lifecycle(files, capsys):
    d, vec = files
    st = d / "store"
    code, out, _ = run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vector", "--half-life", "30",
                       "--decay", "policy=none", "--json")
    assert code == 0 and json.loads(out)["items"] == 60
    code, out, _ = run(capsys, "ingest", st, d / "in.csv", "--map", "vec=vector", "--batch", "25", "--json")
    assert code == 0 and json.loads(out) == {"store": str(st), "ingested": 60, "items": 120,
                                             "first_id": 60, "last_id": 119}
    code, out, _ = run(capsys, "info", st, "--json")
    assert json.loads(out)["store"]["items"] == 120
    # search agrees with the Python API on the same store
    q = vec[3]
    code, out, _ = run(capsys, "search", st, "--vector", json.dumps(q.tolist()), "--mode", "as_of",
                       "--as-of", "2024-02-01", "-k", "5", "--json")
    got = [r["id"] for r in json.loads(out)]
    want = ce.Engine.open(st).search(q, 5, mode="as_of", as_of="2024-02-01").column("id").to_pylist()
    assert code == 0 and got == want
    np.save(d / "q.npy", vec[:3])
    code, out, _ = run(capsys, "search", st, "--vectors", d / "q.npy", "--mode", "latest", "-k", "2", "--json")
    assert sorted({r["query"] for r in json.loads(out)}) == [0, 1, 2]
    # lifecycle
    code, out, _ = run(capsys, "supersede", st, "s0", d / "v2.parquet", "--effective-at", "2024-06-01",
                       "--version", "v2.0.0", "--json")
    new_id = json.loads(out)["ids"][0]
    code, out, _ = run(capsys, "history", st, "s0", "--json")
    hist = json.loads(out)
    assert [h["version"] for h in hist] == ["v1.0.0", "v1.0.0", "v2.0.0"] and hist[-1]["id"] == new_id
    code, out, _ = run(capsys, "retract", st, new_id, "--json")
    assert code == 0 and json.loads(out) == {"retracted": [new_id]}
    code, out, _ = run(capsys, "history", st, "s0", "--json")
    assert json.loads(out)[-1]["retracted_at"] is not None


def test_ingest_by_valid_from_keeps_the_rows_and_the_answers(files, capsys):
    d, vec = files
    for order, st in (("input", d / "given"), ("valid_from", d / "sorted")):
        code, out, _ = run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vector", "--order", order,
                           "--batch", "25", "--json")
        got = json.loads(out)
        assert code == 0 and {k: got[k] for k in ("store", "ingested", "items")} == {
            "store": str(st), "ingested": 60, "items": 60}
    a, b = ce.Engine.open(d / "given", read_only=True), ce.Engine.open(d / "sorted", read_only=True)
    given = a.columns()["valid_from"]
    np.testing.assert_array_equal(a.columns()["id"], np.arange(60))
    assert not np.all(np.diff(given) >= 0)
    # each --batch call is stored by valid_from (ties as given); automatic ids number the
    # stored rows, so b's id j is a's row perm[j]
    perm = np.concatenate([lo + np.argsort(given[lo:lo + 25], kind="stable") for lo in (0, 25, 50)])
    assert json.loads(out)["first_id"] == int(np.flatnonzero(perm == 0)[0])  # the file's first row's id
    np.testing.assert_array_equal(b.columns()["id"], np.arange(60))
    np.testing.assert_array_equal(b.columns()["valid_from"], given[perm])
    np.testing.assert_array_equal(b.vectors(), a.vectors(perm))
    q = vec[:4]
    ra, rb = a.search_batch(q, 5, exact=True, as_of="2024-01-20"), b.search_batch(q, 5, exact=True, as_of="2024-01-20")
    np.testing.assert_array_equal(perm[rb.column("id").to_numpy()], ra.column("id").to_numpy())
    assert ra.drop_columns(["id"]).equals(rb.drop_columns(["id"]))
    with pytest.raises(SystemExit):
        cli.main(["ingest", str(d / "x"), str(d / "in.parquet"), "--order", "time"])


def test_verify_from_arrays_and_from_store(files, capsys):
    d, _ = files
    chains = [[[0], [1, 2]], [[3]], []]
    (d / "chains.json").write_text(json.dumps(chains))
    v = np.array([0.9, 0.2, 0.7, 0.4])
    np.save(d / "v.npy", v)
    code, out, _ = run(capsys, "verify", d / "chains.json", "--validity", d / "v.npy", "--gamma", "0.5", "--json")
    want = ce.verify_chains(chains, v, 0.5).to_pylist()
    got = json.loads(out)
    assert code == 0 and [r["robustness"] for r in got] == [r["robustness"] for r in want]
    assert [r["targets"] for r in got] == [r["targets"] for r in want]
    st = d / "store"
    run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vector", "--half-life", "30")
    code, out, _ = run(capsys, "verify", d / "chains.json", "--store", st, "--at", "2024-03-01",
                       "--gamma", "0.5", "--json")
    eng = ce.Engine.open(st)
    want = ce.verify_chains(chains, (eng, "2024-03-01"), 0.5).to_pylist()
    assert code == 0 and [r["robustness"] for r in json.loads(out)] == [r["robustness"] for r in want]


def test_errors_are_one_line_with_meaningful_exit_codes(files, capsys):
    d, _ = files
    st = d / "store"
    code, out, err = run(capsys, "ingest", st, d / "missing.parquet")
    assert code == 3 and "missing.parquet: no such file" in err and "Traceback" not in err
    code, _, err = run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vectr", "--dim", "8")
    assert code == 1 and "'vectr'" in err and "--map" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "ingest", st, d / "in.parquet")
    assert code == 2 and "--dim" in err
    assert not st.exists()  # nothing was created by the refused calls
    run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vector")
    code, _, err = run(capsys, "search", st, "--vector", "[1, 2, 3]")
    assert code == 1 and "3 dimensions" in err and "8" in err
    code, _, err = run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vector", "--dim", "4")
    assert code == 1 and "8-dimensional" in err
    code, _, err = run(capsys, "retract", st, 99999)
    assert code == 1 and "unknown id 99999" in err
    code, _, err = run(capsys, "search", d / "nostore", "--vector", "[1]")
    assert code == 3 and "chrono ingest" in err
    with pytest.raises(SystemExit) as e:
        cli.main(["search", str(st), "--bogus"])
    assert e.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err
    with pytest.raises(cli.CliError):
        cli.main(["--debug", "search", str(st), "--vector", "[1, 2, 3]"])


def test_query_on_a_demo_dimension_store(files, capsys):
    from chrono_engine import demo
    d, _ = files
    eng, _ = demo.build_engine()
    eng.save(d / "demo")
    code, out, _ = run(capsys, "query", d / "demo", "What is the director's hotel cap now?",
                       "--now", demo.NOW, "--tz", demo.TZ, "--json")
    top = json.loads(out)["hits"][0]
    assert code == 0 and top["version"] == "v2.0.0" and "800" in top["content"]


def test_bench_tiny(tmp_path, capsys):
    out = tmp_path / "b.json"
    code = cli.main(["bench", "--n", "2000", "--dim", "16", "--queries", "20", "--slow-queries", "5",
                     "--selectivity", "0.3", "--modes", "as_of", "--threads", "1", "--peers", "numpy",
                     "--json", str(out)])
    assert code == 0
    assert json.loads(out.read_text())



def test_bench_help_names_the_command_and_its_regimes_parse(capsys):
    """`chrono bench --help` says `usage: chrono bench` (not `python -m ...`), and every
    regime word its help offers is one the parser takes ("both": every regime)."""
    from chrono_engine import bench
    from chrono_engine.bench.corpus import REGIMES
    for argv, usage in ((["bench", "--help"], "usage: chrono bench "), (["bench", "--serve", "--help"],
                                                                        "usage: chrono bench --serve")):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        out = " ".join(capsys.readouterr().out.split())
        assert e.value.code == 0 and out.startswith(usage), out[:120]
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m chrono_engine.bench ")
    text = " ".join(bench.parser().format_help().split())
    offered = [w for w in [*REGIMES, "both"] if w in text.split("--regime REGIME ", 1)[1].split(" --", 1)[0]]
    assert offered == [*REGIMES, "both"]
    for word in offered:
        cfg = bench.config_from_args(bench.parser().parse_args(["--regime", word]))
        assert cfg.regimes == (tuple(REGIMES) if word == "both" else (word,))
    assert bench.config_from_args(bench.parser().parse_args(["--regime", "gentle,steep"])).regimes == ("gentle", "steep")
    with pytest.raises(SystemExit, match="unknown regime 'flat' \\(steep, gentle, both\\)"):
        bench.config_from_args(bench.parser().parse_args(["--regime", "flat"]))

def test_plot_decay_renders(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "d.png"
    code, text, _ = run(capsys, "plot-decay", "--decay", "news=14", "--decay", "policy=365", "--out", out, "--json")
    assert code == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    at = json.loads(text)["at_days"]
    assert at["365"]["policy"] == pytest.approx(0.5) and at["30"]["news"] == pytest.approx(2 ** (-30 / 14))


def test_search_flags_are_the_search_options(files, capsys):
    """`chrono search` has one flag per SearchOptions field, and what the flags say reaches
    the search: the same table as the Python API with the same options."""
    assert set(cli._SEARCH_FLAGS) == set(ce.SearchOptions.names())
    d, vec = files
    st = d / "store"
    assert run(capsys, "ingest", st, d / "in.parquet", "--map", "vec=vector", "--half-life", "30")[0] == 0
    eng = ce.Engine.open(st)
    opts = ce.SearchOptions(mode="window", window=("2024-01-05", "2024-01-20"), as_of="2024-01-25",
                            known_at="2030-01-01", fact_types=["news"], tau=0.01, arbitrate=False,
                            fusion="linear", alpha=0.5, exact=True, explain=True, lang="zh", verify=0.3)
    want = eng.search(vec[5], 7, opts).to_pylist()
    code, out, _ = run(capsys, "search", st, "--vector", json.dumps(vec[5].tolist()), "-k", "7", "--json",
                       "--mode", "window", "--window", "2024-01-05", "2024-01-20", "--as-of", "2024-01-25",
                       "--known-at", "2030-01-01", "--fact-types", "news", "--tau", "0.01", "--no-arbitrate",
                       "--fusion", "linear", "--alpha", "0.5", "--exact", "--explain", "--lang", "zh",
                       "--verify", "0.3")
    assert code == 0
    got = json.loads(out)
    assert [r["id"] for r in got] == [r["id"] for r in want] and len(want) > 0
    assert [r["citation"] for r in got] == [r["citation"] for r in want]
    assert {"reason", "robustness", "refetch"} <= set(got[0])
    # a bad option value is a usage error of the engine, named, exit 1
    code, _, err = run(capsys, "search", st, "--vector", json.dumps(vec[5].tolist()), "--alpha", "2")
    assert code == 1 and "alpha" in err
    # an open window end is 'open' (None in the Python API); an unknown fact type is refused
    want = eng.search(vec[5], 7, mode="window", window=("2024-01-05", None), as_of="2024-01-25").to_pylist()
    code, out, _ = run(capsys, "search", st, "--vector", json.dumps(vec[5].tolist()), "-k", "7", "--json",
                       "--mode", "window", "--window", "2024-01-05", "open", "--as-of", "2024-01-25")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [r["id"] for r in want] and len(want) == 7
    code, _, err = run(capsys, "search", st, "--vector", json.dumps(vec[5].tolist()), "--fact-types", "nwes")
    assert code == 1 and "fact_types" in err and "'nwes'" in err and "known: 'policy', 'news'" in err
    # known at a time before any ingest: the empty answer, and a hint why on stderr
    code, out, err = run(capsys, "search", st, "--vector", json.dumps(vec[5].tolist()), "--json", "--mode", "all",
                         "--known-at", "2001-01-01")
    assert code == 0 and json.loads(out) == []
    assert "--known-at 2001-01-01T00:00:00Z is before the store's first ingest" in err, err
    code, out, err = run(capsys, "search", st, "--vector", json.dumps(vec[5].tolist()), "--json", "--mode", "all",
                         "--known-at", "2030-01-01")
    assert json.loads(out) and err == ""


# ----------------------------------------------------------------------------- bad input

def _chrono(*argv, cwd):
    """``python -m chrono_engine.cli ARGV`` in a fresh process: the exit status and stderr a
    shell sees (the package under test first on the path, whichever tree it is)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = dict(os.environ, PYTHONPATH=str(Path(ce.__file__).resolve().parents[1]))
    return subprocess.run([sys.executable, "-m", "chrono_engine.cli", *map(str, argv)], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    vec = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    text = [json.dumps(v.tolist()) for v in vec]
    text[3] = json.dumps(vec[3, :3].tolist())  # one row of 3 numbers among rows of 4
    pcsv.write_csv(pa.table({"vector": text, "valid_from": ["2024-01-01"] * 6}), d / "ragged.csv")
    np.save(d / "empty.npy", np.zeros((0,), np.float32))
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    eng = ce.Engine(4, threads=1)
    eng.ingest({"vector": vec, "valid_from": ["2024-01-01"] * 6})
    eng.save(d / "store")
    eng.save(d / "corrupt")
    for f in (d / "corrupt").rglob("*"):  # every file of the store is garbage, whatever the format
        if f.is_file():
            f.write_bytes(b"\x00garbage\xff" * 3)
    return d


# argv (relative to the files' folder), exit status, words of the one error line
HOSTILE_CLI = {
    "csv vector of the wrong length": (["ingest", "new1", "ragged.csv", "--dim", "4"], 1,
                                       ["row 3", "vector dimension"]),
    "--batch 0": (["ingest", "new2", "ragged.csv", "--batch", "0"], 2, ["--batch", "at least 1"]),
    "--batch -5": (["ingest", "new3", "ragged.csv", "--batch", "-5"], 2, ["--batch", "at least 1"]),
    "--threads 100000": (["ingest", "new4", "ragged.csv", "--threads", "100000"], 2, ["--threads", "1024"]),
    "empty .npy": (["search", "store", "--vectors", "empty.npy"], 1, ["empty.npy", "shape (0,)"]),
    "-k 10**30": (["search", "store", "--vector", "[1, 0, 0, 0]", "-k", str(10**30)], 2, ["-k", "2147483647"]),
    "--vector nested deep": (["search", "store", "--vector", "[" * 5000 + "]" * 5000], 2, ["--vector"]),
    "id beyond uint64": (["retract", "store", str(2**64)], 2, ["ids", "18446744073709551615"]),
    "corrupt store (info)": (["info", "corrupt"], 3, ["corrupt"]),
    "corrupt store (search)": (["search", "corrupt", "--vector", "[1, 0, 0, 0]"], 3, ["corrupt"]),
    "chains nested deep": (["verify", "deep.json", "--validity", "empty.npy", "--gamma", "0.5"], 3, ["deep.json"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(HOSTILE_CLI))
def test_bad_input_is_one_error_line_with_the_documented_exit_status(hostile_files, case):
    """Tracebacks (a CSV vector of the wrong length, --batch 0, an empty .npy, -k 10**30),
    a silent success (--batch -5 ingested nothing and exited 0) and a corrupt store that
    exited 1: each is now one error line and the documented status (1 refused, 2 usage,
    3 missing / unreadable / corrupt file). Usage errors keep argparse's usage line above
    the error line, as every usage error of the command does."""
    argv, status, words = HOSTILE_CLI[case]
    p = _chrono(*argv, cwd=hostile_files)
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    errors = [line for line in lines if "error:" in line]
    assert p.returncode == status and len(errors) == 1 and errors == lines[-1:], p.stderr
    if status != 2:
        assert len(lines) == 1, p.stderr
    for w in words:
        assert w in errors[0], p.stderr
    if argv[0] == "ingest":
        assert not (hostile_files / argv[1]).exists()  # nothing created by a refused ingest


def test_threads_zero_still_means_every_core(tmp_path, capsys):
    t = pa.table({"vector": [[1.0, 0.0], [0.0, 1.0]], "valid_from": ["2024-01-01"] * 2})
    pq.write_table(t, tmp_path / "in.parquet")
    code, out, _ = run(capsys, "ingest", tmp_path / "st", tmp_path / "in.parquet", "--threads", "0", "--json")
    assert code == 0 and json.loads(out)["items"] == 2


@pytest.mark.slow
def test_a_store_held_by_another_writer_is_a_one_line_refusal(tmp_path):
    """Writing commands take the store's writer lock: while another writer holds it they
    exit 1 with one line (not 3: nothing is wrong with the files); readers still work."""
    st = tmp_path / "store"
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"vector": [1.0, 0.0, 0.0, 0.0], "valid_from": "2024-01-01"}) + "\n")
    with ce.Engine.create(st, 4) as holder:
        holder.ingest({"vector": np.eye(4, dtype=np.float32), "valid_from": ["2024-01-01"] * 4})
        for argv in (("ingest", st, rows), ("retract", st, 1)):
            proc = _chrono(*argv, cwd=tmp_path)
            assert proc.returncode == 1, proc.stderr
            assert "open for writing by another writer" in proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        proc = _chrono("info", st, "--json", cwd=tmp_path)
        assert proc.returncode == 0 and json.loads(proc.stdout)["store"]["items"] == 4


def test_ingest_keeps_extra_columns_as_metadata_and_search_filters_on_them(tmp_path, capsys):
    """A Parquet / CSV / JSON Lines file's columns beyond the engine's are stored as metadata
    columns; ``chrono search --where`` returns exactly the rows the filter passes (by the
    file's own values) and ``--columns`` picks which metadata columns show."""
    rng = np.random.default_rng(3)
    n = 40
    vec = rng.standard_normal((n, 8)).astype(np.float32)
    tenant = [("acme", "globex", "initech")[i % 3] for i in range(n)]
    acl = [sorted({("hr", "eng", "all")[j] for j in rng.integers(0, 3, rng.integers(0, 3))}) for _ in range(n)]
    level = [int(x) for x in rng.integers(0, 10, n)]
    t = pa.table({"vector": [list(map(float, v)) for v in vec], "valid_from": ["2024-01-01T00:00:00"] * n,
                  "tenant": tenant, "acl": acl, "level": level})
    pq.write_table(t, tmp_path / "m.parquet")
    pcsv.write_csv(t.drop_columns(["acl"]).set_column(0, "vector", pa.array([json.dumps(v) for v in vec.tolist()])),
                   tmp_path / "m.csv")
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in t.to_pylist()))
    q = json.dumps(vec[0].tolist())
    checks = [({"tenant": "acme"}, [x == "acme" for x in tenant]),
              ({"level": {"$gte": 5}, "tenant": {"$ne": "globex"}}, [lv >= 5 and x != "globex" for lv, x in zip(level, tenant)]),
              ({"acl": {"$in": ["hr"]}}, ["hr" in a for a in acl])]
    for name, kinds in (("m.parquet", {"tenant": "string", "acl": "list<string>", "level": "int64"}),
                        ("m.csv", {"tenant": "string", "level": "int64"}),
                        ("m.jsonl", {"tenant": "string", "acl": "list<string>", "level": "int64"})):
        st = tmp_path / (name + ".store")
        code, out, err = run(capsys, "ingest", st, tmp_path / name, "--batch", "15", "--json")
        assert code == 0 and json.loads(out)["items"] == n, err
        assert ce.Engine.open(st, read_only=True).metadata == kinds
        for where, passes in checks:
            if not set(where) <= set(kinds):
                continue
            code, out, _ = run(capsys, "search", st, "--vector", q, "--mode", "all", "-k", n, "--where",
                               json.dumps(where), "--json")
            got = json.loads(out)
            assert code == 0 and sorted(r["id"] for r in got) == [i for i in range(n) if passes[i]]
            assert all(r["tenant"] == tenant[r["id"]] and r["level"] == level[r["id"]] for r in got)
        code, out, _ = run(capsys, "search", st, "--vector", q, "-k", 5, "--where", '{"tenant": "acme"}',
                           "--columns", "tenant", "--json")
        rows = json.loads(out)
        assert code == 0 and len(rows) == 5 and all(r["tenant"] == "acme" and "level" not in r for r in rows)
        code, _, err = run(capsys, "search", st, "--vector", q, "--where", '{"region": "north"}')
        assert code == 1 and "unknown field" in err
