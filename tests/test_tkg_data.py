"""Loading temporal KG datasets: ICEWS14 in both encodings (when the data directory holds it,
see chrono_engine.datasets) and every error path on small synthetic files."""
import numpy as np
import pytest

from chrono_engine import datasets, tkg
from chrono_engine.errors import DataFileError, DatasetNotFoundError


def _icews14():
    """ICEWS14's folder, found by name through the dataset loader; a skip saying where it
    looked and how to get the data when it is not there."""
    try:
        return datasets.locate("icews14")
    except DatasetNotFoundError as e:
        pytest.skip(f"ICEWS14 is not available: {e}")


def test_icews14_names_format_matches_its_statistics():
    _icews14()
    d = tkg.load("icews14")  # by name, as `chrono tkg eval` and the benches load it
    assert d.source_format == "names" and d.time_unit == "day" and str(d.day0) == "2014-01-01"
    assert (d.n_entities, d.n_relations) == (7128, 230)
    assert (d.train.num_rows, d.valid.num_rows, d.test.num_rows) == (63685, 13823, 13222)
    tr = d.train
    assert len(np.unique(np.r_[tr.column("subject").to_numpy(), tr.column("object").to_numpy()])) == 6180
    assert len(np.unique(tr.column("relation").to_numpy())) == 222
    assert len(np.unique(tr.column("t").to_numpy())) == 262
    inv = d.with_inverse("test")
    assert inv.num_rows == 2 * 13222
    assert inv.column("relation").to_numpy()[13222:].min() >= 230
    assert d.relation_name(230 + 5) == "_" + d.relation_name(5)


def test_ids_and_names_formats_hold_the_same_facts():
    """xERTE's ids files, mapped through their names (spaces -> '_', hours / 24 -> day),
    hold exactly TLogic's facts (the README's conversion rule)."""
    root = _icews14()
    names = tkg.load(root)
    ids = tkg.load(root / "xerte_ids")
    assert ids.source_format == "ids" and ids.time_unit == "file"
    for split in ("valid", "test"):
        a, b = names.split(split), ids.split(split)
        ent_a, rel_a = np.asarray(names.entities, object), np.asarray(names.relations, object)
        ent_b = np.asarray([e.replace(" ", "_") for e in ids.entities], object)
        rel_b = np.asarray([r.replace(" ", "_") for r in ids.relations], object)
        fa = set(zip(ent_a[a.column("subject").to_numpy()], rel_a[a.column("relation").to_numpy()],
                     ent_a[a.column("object").to_numpy()], a.column("t").to_numpy().tolist()))
        tb = b.column("t").to_numpy()
        assert (tb % 24 == 0).all()
        fb = set(zip(ent_b[b.column("subject").to_numpy()], rel_b[b.column("relation").to_numpy()],
                     ent_b[b.column("object").to_numpy()], (tb // 24).tolist()))
        assert fa == fb and len(fa) > 10_000


def write(dirp, files):
    dirp.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (dirp / name).write_text(text, encoding="utf-8")
    return dirp


NAMES = {"train.txt": "A\tr1\tB\t2014-01-01\nB\tr2\tC\t2014-01-02\n",
         "valid.txt": "C\tr1\tA\t2014-01-03\n",
         "test.txt": "A\tr2\tC\t2014-01-04\n"}


def test_small_names_dataset_without_maps(tmp_path):
    d = tkg.load(write(tmp_path / "d", NAMES))
    assert d.entities == ("A", "B", "C") and d.relations == ("r1", "r2")
    assert d.test.to_pylist() == [{"subject": 0, "relation": 1, "object": 2, "t": 3}]


def test_small_ids_dataset_with_padding(tmp_path):
    d = tkg.load(write(tmp_path / "d", {"train.txt": "0  \t1 \t2\t0\t0\n", "valid.txt": "2\t0\t1\t24\t-1\n",
                                        "test.txt": "1\t1\t0\t48\t0\n", "entity2id.txt": "a b\t0\nc\t1\nd\t2\n"}))
    assert d.entities == ("a b", "c", "d") and d.relations == ("0", "1")
    assert d.train.to_pylist() == [{"subject": 0, "relation": 1, "object": 2, "t": 0}]


@pytest.mark.parametrize("files, where, words", [
    ({**NAMES, "valid.txt": "C\tr1\tA\n"}, "valid.txt:1", "expected 4 tab-separated fields"),
    ({**NAMES, "test.txt": "A\tr2\tC\t2014-13-04\n"}, "test.txt:1", "not a YYYY-MM-DD date"),
    ({**NAMES, "test.txt": "A\tr2\tC\t2014-01-04\nA\tr2\tZ\t2014-01-05\n",
      "entity2id.json": '{"A": 0, "B": 1, "C": 2}'}, "test.txt:2", "unknown entity 'Z'"),
    ({**NAMES, "valid.txt": "\n"}, "valid.txt", "the split is empty"),
    ({**NAMES, "valid.txt": "C\tr1\tA\t2013-12-31\n"}, "valid.txt", "splits must be chronological"),
    ({"train.txt": "0\t1\t2\t0\t0\n", "valid.txt": "0\tx\t2\t24\t0\n", "test.txt": "0\t1\t2\t48\t0\n"},
     "valid.txt:1", "must be integers"),
    ({"train.txt": "0\t1\t2\t0\t0\n", "valid.txt": "0\t1\t2\t24\t0\n", "test.txt": "0\t1\t9\t48\t0\n",
      "entity2id.txt": "a\t0\nb\t1\nc\t2\n"}, "entity2id.txt", "the splits use id 9"),
])
def test_bad_files_name_file_and_line(tmp_path, files, where, words):
    with pytest.raises(DataFileError) as e:
        tkg.load(write(tmp_path / "d", files))
    assert where in str(e.value) and words in str(e.value)


def test_missing_files(tmp_path):
    with pytest.raises(DataFileError, match="not a directory"):
        tkg.load(tmp_path / "nope")
    with pytest.raises(DataFileError, match="test.txt: no such file"):
        tkg.load(write(tmp_path / "d", {k: v for k, v in NAMES.items() if k != "test.txt"}))


# ----------------------------------------------------------------------- evaluation

def test_rank_average_against_numpy():
    rng = np.random.default_rng(3)
    for _ in range(200):
        s = rng.integers(0, 4, 12).astype(float)  # many ties
        true = int(rng.integers(0, 12))
        filt = rng.choice(12, int(rng.integers(0, 4)), replace=False)
        filt = filt[filt != true]
        keep = np.ones(12, bool)
        keep[filt] = False
        others = s[keep & (np.arange(12) != true)]
        want = 1 + (others > s[true]).sum() + (others == s[true]).sum() / 2
        assert tkg.rank_average(s, true, filt) == want


def test_evaluate_small_dataset_by_hand(tmp_path):
    """Two entities recur; the ranks below follow from the module's formula."""
    files = {"train.txt": "A\tr\tB\t2014-01-01\nA\tr\tC\t2014-01-02\n",
             "valid.txt": "A\tr\tB\t2014-01-03\n",
             "test.txt": "A\tr\tC\t2014-01-04\nA\tr\tB\t2014-01-04\n"}
    d = tkg.load(write(tmp_path / "d", files))
    res = tkg.evaluate(d, "test", half_life=1.0, w_subject=0.0, w_relation=0.0)
    # (A, r, ?, day 3): scores B = 2^-3 + 2^-1, C = 2^-2: B ranks 1; C ranks 1 once B is filtered.
    # Inverse queries (B, r^-1, ?) and (C, r^-1, ?) at day 3: A scores 2^-1 and 2^-2 resp., rank 1.
    assert res["queries"] == 4 and res["mrr"] == 1.0 and res["hits@1"] == 1.0
    res = tkg.evaluate(d, "valid", half_life=1.0, w_subject=0.0, w_relation=0.0)
    # (A, r, ?, day 2): B = 2^-2, C = 2^-1 -> B ranks 2; (B, r^-1, ?): A = 2^-2 -> rank 1
    assert res["queries"] == 2 and res["mrr"] == pytest.approx((1 / 2 + 1) / 2)


def test_cli_tkg_eval_json(tmp_path, capsys):
    import json
    from chrono_engine import cli
    d = write(tmp_path / "d", NAMES)
    out = tmp_path / "m.json"
    assert cli.main(["tkg", "eval", "--data", str(d), "--json", str(out)]) == 0
    m = json.loads(out.read_text())
    assert {"mrr", "hits@1", "hits@3", "hits@10", "queries", "seconds", "peak_mb"} <= set(m)
    assert m["queries"] == 2 and "MRR" in capsys.readouterr().out
    assert cli.main(["tkg", "eval", "--data", str(tmp_path / "none")]) == 1
    assert "not a directory" in capsys.readouterr().err
