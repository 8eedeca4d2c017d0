"""The `chrono` command: info, and bench on a tiny corpus (exit code 0, JSON written)."""
import json

from chrono_engine import cli


def test_info(capsys):
    assert cli.main(["info"]) == 0
    assert json.loads(capsys.readouterr().out)["hnswlib_version"] == "0.8.0"


def test_bench_tiny(tmp_path, capsys):
    out = tmp_path / "b.json"
    code = cli.main(["bench", "--n", "2000", "--dim", "16", "--queries", "20", "--slow-queries", "5",
                     "--selectivity", "0.3", "--modes", "as_of", "--threads", "1", "--peers", "numpy",
                     "--json", str(out)])
    assert code == 0
    assert json.loads(out.read_text())
