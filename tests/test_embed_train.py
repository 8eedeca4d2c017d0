"""LoRA + linear-CKA training of the temporal encoder's MLP (extra [train]).

Held-out CKA is recomputed here from its definition (explicit centring matrix, HSIC) on
fresh times, not with the module's own helper; the exported ONNX graph is checked against
the NumPy reference and against a torch forward of the merged weights.
"""
import sys

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine.errors import EmbeddingError

torch = pytest.importorskip("torch", reason="the [train] extra is not installed (torch)")
from chrono_engine.embed.train import train_temporal

DIM, DAY = 32, 86_400_000_000
SPAN = ("1990-01-01", "2030-01-01")
FAST = {"samples": 2048, "steps": 150, "seed": 3}


def _times(n, seed):
    lo, hi = (int(np.datetime64(s, "us").astype(np.int64)) for s in SPAN)
    return np.random.default_rng(seed).integers(lo, hi, n, dtype=np.int64)


def _cka(Z, K):
    """Linear CKA from its definition: HSIC(ZZᵀ, K) / sqrt(HSIC(ZZᵀ, ZZᵀ) HSIC(K, K))."""
    n = len(K)
    H = np.eye(n) - np.full((n, n), 1.0 / n)
    L = Z.astype(np.float64) @ Z.astype(np.float64).T
    hsic = lambda A, B: np.trace(A @ H @ B @ H)
    return hsic(L, K) / np.sqrt(hsic(L, L) * hsic(K, K))


def _torch_forward(mlp, X):
    W1, b1, W2, b2 = (torch.from_numpy(np.asarray(mlp[k], np.float32)) for k in ("W1", "b1", "W2", "b2"))
    X = torch.from_numpy(X)
    y = X + torch.tanh(X @ W1.T + b1) @ W2.T + b2
    return (y / y.norm(dim=1, keepdim=True)).numpy()


@pytest.fixture(scope="module")
def trained():
    enc = ce.TemporalEncoder(dim=DIM, threads=1)
    new, report = train_temporal(enc, length_scale=365.0, span=SPAN, **FAST)
    return enc, new, report


def test_training_raises_heldout_cka(trained):
    enc, new, report = trained
    assert new.trained and not enc.trained and new.dim == DIM and new.periods == enc.periods
    t = _times(600, seed=99)  # fresh times, never seen in training
    d = t.astype(np.float64) / DAY
    K = np.exp(-np.abs(d[:, None] - d[None, :]) / 365.0)
    before = [_cka(enc.encode(t)[:, :s], K) for s in report["prefixes"]]
    after = [_cka(new.encode(t)[:, :s], K) for s in report["prefixes"]]
    assert report["prefixes"] == [8, 16, 32]
    assert np.mean(after) > np.mean(before) + 0.1, (before, after)
    assert all(a > b for a, b in zip(after, before))
    # the report's held-out figures tell the same story
    assert report["mean_cka_after"] > report["mean_cka_before"] + 0.1
    assert report["steps"] == FAST["steps"] and report["seconds"] > 0
    assert set(report["cka_before"]) == set(report["cka_after"]) == {8, 16, 32}
    assert -1 <= report["spearman_after"] <= 1 and report["spearman_before"] > 0.99


def test_onnx_equals_reference_and_torch(trained, tmp_path):
    _, new, _ = trained
    t = _times(500, seed=7)
    out = new.encode(t)
    np.testing.assert_allclose(out, new.reference(t), rtol=0, atol=1e-5)
    np.testing.assert_allclose(out, _torch_forward(new.config()["mlp"], new.features(t)), rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    new.save(tmp_path / "t.onnx")  # the weights ride in the model and load back
    np.testing.assert_array_equal(ce.TemporalEncoder.load(tmp_path / "t.onnx", threads=1).encode(t), out)


def test_zero_steps_is_the_untrained_encoder():
    enc = ce.TemporalEncoder(dim=16, threads=1)
    new, report = train_temporal(enc, steps=0, samples=256)
    mlp = new.config()["mlp"]
    assert not np.any(mlp["W2"]) and not np.any(mlp["b1"]) and not np.any(mlp["b2"])
    assert np.any(mlp["W1"])  # the frozen random base
    t = _times(300, seed=1)
    np.testing.assert_allclose(new.encode(t), enc.features(t), rtol=0, atol=1e-6)
    assert report["cka_before"] == pytest.approx(report["cka_after"], abs=1e-6)
    # a trained encoder is the frozen base of further training: zero steps leave it as it is
    again, _ = train_temporal(new, steps=0, samples=256)
    np.testing.assert_allclose(again.encode(t), new.encode(t), rtol=0, atol=1e-6)


def test_deterministic_and_modalities():
    enc = ce.TemporalEncoder(dim=10, modalities=["news", "log"], threads=1)
    a, ra = train_temporal(enc, steps=20, samples=256, batch=64, seed=5)
    b, rb = train_temporal(enc, steps=20, samples=256, batch=64, seed=5)
    for k, v in a.config()["mlp"].items():
        np.testing.assert_array_equal(v, b.config()["mlp"][k])
    assert ra["cka_after"] == rb["cka_after"] and ra["prefixes"] == [2, 4, 10]
    t = _times(50, seed=2)
    np.testing.assert_allclose(a.encode(t, "log"), a.reference(t, "log"), rtol=0, atol=1e-5)
    c, _ = train_temporal(enc, times=t, modality="news", steps=5, batch=16, kernel="gaussian",
                          length_scale=30.0, prefixes=[4, 10])
    assert c.trained


@pytest.mark.parametrize("kwargs, match", [
    ({"kernel": "cosine"}, "kernel"),
    ({"length_scale": 0}, "length_scale"),
    ({"length_scale": -3.0}, "length_scale"),
    ({"length_scale": float("nan")}, "length_scale"),
    ({"rank": 0}, "rank"),
    ({"rank": 17}, "rank"),
    ({"rank": 2.0}, "rank"),
    ({"hidden": 0}, "hidden"),
    ({"steps": -1}, "steps"),
    ({"batch": 2}, "batch"),
    ({"lr": 0.0}, "lr"),
    ({"prefixes": []}, "prefixes"),
    ({"prefixes": [0, 8]}, "prefixes"),
    ({"prefixes": [8, 17]}, "prefixes"),
    ({"span": ("2030-01-01", "1990-01-01")}, "span"),
    ({"span": ("yesterday", "today")}, "span"),
    ({"holdout": 1.0}, "holdout"),
    ({"times": np.arange(5)}, "at least 16"),
    ({"modality": "news"}, "modalit"),
    ({"times": np.full(20, 10**15)}, "equal"),
    ({"times": np.arange(20) * 10**12, "holdout": 0.9}, "training rows"),
])
def test_bad_arguments(kwargs, match):
    enc = ce.TemporalEncoder(dim=16, threads=1)
    with pytest.raises(EmbeddingError, match=match):
        train_temporal(enc, **{"steps": 1, "samples": 64, **kwargs})


def test_bad_encoder_and_hidden_mismatch():
    with pytest.raises(EmbeddingError, match="TemporalEncoder"):
        train_temporal("not an encoder")
    enc, _ = train_temporal(ce.TemporalEncoder(dim=8, threads=1), steps=0, samples=64, hidden=12)
    with pytest.raises(EmbeddingError, match="width 12"):
        train_temporal(enc, hidden=64, steps=0, samples=64)


def test_missing_torch_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"chrono_engine\[train\]"):
        train_temporal(ce.TemporalEncoder(dim=8, threads=1), steps=0, samples=64)
