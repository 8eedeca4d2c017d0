"""Training the temporal encoder's MLP: LoRA adapters on a frozen base, linear-CKA objective.

The MLP of :class:`~chrono_engine.embed.temporal.TemporalEncoder` maps the sinusoidal block
x(t) to z = normalise(x + W2 tanh(W1 x + b1) + b2). Here W1 = W1_base + B1 A1 and
W2 = W2_base + B2 A2, with the bases frozen and only the rank-r adapters (and the biases)
trained. For an untrained encoder W1_base ~ N(0, 1/dim) (seeded), W2_base = 0 and b = 0;
for a trained one its own weights are the base. B starts at zero, so step 0 *is* the given
encoder. The objective is the mean over Matryoshka prefixes s of linear CKA between
Z[:, :s] (the prefix of the normalised block, not renormalised, as the block is consumed)
and the Gram matrix K_ij = k(|t_i − t_j|) of a kernel on time differences:

    CKA(L, K) = <HLH, HKH> / sqrt(<HLH, HLH> <HKH, HKH>),   L = Z_s Z_sᵀ,   H = I − 11ᵀ/n.

torch computes only the MLP (the features come from :meth:`TemporalEncoder.features`, NumPy
float32); the merged weights go back into a new TemporalEncoder, i.e. an ONNX graph.
Needs the extra ``[train]`` (``pip install 'chrono_engine[train]'``).
"""
from __future__ import annotations

import datetime as _dt
import time as _time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError, MissingDependencyError
from ._times import as_utc_us
from .temporal import TemporalEncoder

__all__ = ["KERNELS", "kernel_gram", "linear_cka", "spearman", "train_temporal"]

KERNELS = ("laplace", "gaussian")
_DAY_US = 86_400_000_000


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingDependencyError("training the temporal encoder needs torch: pip install 'chrono_engine[train]'") from None
    return torch


def _int(v: Any, name: str, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise EmbeddingError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def _pos(v: Any, name: str) -> float:
    if isinstance(v, _dt.timedelta):
        v = v.total_seconds() / 86_400
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not np.isfinite(v) or not v > 0:
        raise EmbeddingError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


def kernel_gram(days: np.ndarray, kernel: str, length_scale: float) -> np.ndarray:
    """K_ij = k(|t_i − t_j|) for times in days (float64)."""
    d = np.abs(days[:, None] - days[None, :]) / length_scale
    return np.exp(-d) if kernel == "laplace" else np.exp(-0.5 * d * d)


def linear_cka(Z: np.ndarray, K: np.ndarray) -> float:
    """Linear CKA between the Gram Z Zᵀ and a kernel Gram K (NumPy, float64)."""
    Z = np.asarray(Z, np.float64)
    Zc = Z - Z.mean(axis=0)
    Kc = K - K.mean(axis=0) - K.mean(axis=1)[:, None] + K.mean()
    L = Zc @ Zc.T  # = H Z Zᵀ H
    return float((L * Kc).sum() / np.sqrt((L * L).sum() * (Kc * Kc).sum()))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (ties get their average rank)."""
    def rank(x):
        _, inv, cnt = np.unique(x, return_inverse=True, return_counts=True)
        return (np.cumsum(cnt) - (cnt - 1) / 2.0)[inv]
    return float(np.corrcoef(rank(a), rank(b))[0, 1])


def train_temporal(encoder: TemporalEncoder, times: Any = None, *, modality: Any = None,
                   kernel: str = "laplace", length_scale: Any = 365.0, hidden: int | None = None,
                   rank: int = 4, steps: int = 400, batch: int = 256, lr: float = 1e-2, seed: int = 0,
                   prefixes: Sequence[int] | None = None, span: tuple = ("1990-01-01", "2030-01-01"),
                   samples: int = 8192, holdout: float = 0.2) -> tuple[TemporalEncoder, dict]:
    """Train the encoder's MLP with LoRA adapters under the multi-scale linear-CKA objective.

    Parameters
    ----------
    encoder : the encoder to start from (untrained, or trained: its MLP is then the frozen base).
    times : training instants (anything :meth:`TemporalEncoder.encode` reads); None:
        ``samples`` instants uniform over ``span`` (UTC dates or times). A random
        ``holdout`` fraction (at most 2048 rows) is kept out of training for the report.
    modality : one name or one per row when the encoder has modalities (None: uniform at
        random). The kernel looks at times only.
    kernel, length_scale : ``"laplace"`` exp(−|Δt|/ℓ) or ``"gaussian"`` exp(−Δt²/2ℓ²); ℓ in
        days (or a ``timedelta``).
    hidden, rank : MLP width (default 64, or the trained encoder's) and LoRA rank.
    steps, batch, lr, seed : Adam steps, rows per step, learning rate, seed (deterministic:
        one torch thread, seeded generators).
    prefixes : Matryoshka widths (default dim/4, dim/2, dim rounded to whole sin/cos pairs).

    Returns
    -------
    (TemporalEncoder with the merged float32 weights, report) — the report holds held-out
    CKA per prefix and the Spearman correlation of block similarity with −|Δt| over random
    held-out pairs (all of them, and the near ones, |Δt| ≤ 2ℓ), before and after, the final
    training loss, steps and seconds.
    """
    if not isinstance(encoder, TemporalEncoder):
        raise EmbeddingError(f"encoder must be a TemporalEncoder, got {type(encoder).__name__}")
    if kernel not in KERNELS:
        raise EmbeddingError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    ell = _pos(length_scale, "length_scale")
    rank, steps, seed = _int(rank, "rank", 1), _int(steps, "steps", 0), _int(seed, "seed", 0)
    batch, samples = _int(batch, "batch", 4), _int(samples, "samples", 16)
    lr = _pos(lr, "lr")
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 < holdout < 1:
        raise EmbeddingError(f"holdout must be a fraction in (0, 1), got {holdout!r}")
    cfg, D = encoder.config(), encoder.dim
    base = {k: np.asarray(v, np.float32) for k, v in cfg["mlp"].items()} if "mlp" in cfg else None
    h = base["W1"].shape[0] if base is not None else 64
    if hidden is not None and _int(hidden, "hidden", 1) != h and base is not None:
        raise EmbeddingError(f"hidden={hidden} but the trained encoder's MLP has width {h}")
    h = int(hidden) if hidden is not None else h
    if rank > min(D, h):
        raise EmbeddingError(f"rank must be at most min(dim, hidden) = {min(D, h)}, got {rank}")
    if prefixes is None:
        prefixes = sorted({max(2, 2 * round(D / f / 2)) for f in (4, 2)} | {D})
    else:
        if isinstance(prefixes, (str, bytes)) or not hasattr(prefixes, "__len__") or not len(prefixes):
            raise EmbeddingError(f"prefixes must be a non-empty sequence of widths, got {prefixes!r}")
        prefixes = sorted({_int(s, f"prefixes[{i}]", 1) for i, s in enumerate(prefixes)})
        if prefixes[-1] > D:
            raise EmbeddingError(f"prefixes must be at most dim = {D}, got {prefixes[-1]}")

    rng = np.random.default_rng(seed)
    if times is None:
        try:
            lo, hi = (int(np.datetime64(s, "us").astype(np.int64)) for s in span)
        except (TypeError, ValueError):
            raise EmbeddingError(f"span must be two dates or times, got {span!r}") from None
        if not lo < hi:
            raise EmbeddingError(f"span must run forwards, got {span!r}")
        t = rng.integers(lo, hi, samples, dtype=np.int64)
    else:
        t = as_utc_us(times, "times")
        if len(t) < 16:
            raise EmbeddingError(f"times: need at least 16 instants, got {len(t)}")
        if t.min() == t.max():
            raise EmbeddingError("times: all instants are equal (the kernel Gram would be constant)")
    mods = encoder.modalities
    if mods and modality is None:
        modality = [mods[i] for i in rng.integers(0, len(mods), len(t))]
    elif mods and isinstance(modality, str):
        modality = [modality] * len(t)
    X = encoder.features(t, modality)  # validates modality
    days = (t - t.min()).astype(np.float64) / _DAY_US
    perm = rng.permutation(len(t))
    n_ev = min(2048, max(8, round(holdout * len(t))))
    ev, tr = perm[:n_ev], perm[n_ev:]
    if len(tr) < 4:
        raise EmbeddingError(f"holdout={holdout} leaves {len(tr)} training rows (need at least 4)")
    K_ev = kernel_gram(days[ev], kernel, ell)
    pi, pj = rng.integers(0, n_ev, (2, 20_000))
    pi, pj = pi[pi != pj], pj[pi != pj]
    gap = np.abs(days[ev][pi] - days[ev][pj])
    near = gap <= 2 * ell

    def evaluate(Z):
        ck = {s: linear_cka(Z[:, :s], K_ev) for s in prefixes}
        sim = np.einsum("ij,ij->i", Z[pi].astype(np.float64), Z[pj].astype(np.float64))
        return ck, spearman(sim, -gap), spearman(sim[near], -gap[near]) if near.sum() > 2 else float("nan")

    cka0, rho0, near0 = evaluate(encoder.reference(t[ev], None if modality is None else [modality[i] for i in ev]))

    torch = _torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(seed)
        if base is None:
            base = {"W1": (torch.randn(h, D, generator=g) / np.sqrt(D)).numpy(),
                    "b1": np.zeros(h, np.float32), "W2": np.zeros((D, h), np.float32),
                    "b2": np.zeros(D, np.float32)}
        W1b, W2b = (torch.from_numpy(base[k]) for k in ("W1", "W2"))  # frozen
        b1, b2 = (torch.tensor(base[k], requires_grad=True) for k in ("b1", "b2"))
        A1 = (torch.randn(rank, D, generator=g) / np.sqrt(D)).requires_grad_()
        A2 = (torch.randn(rank, h, generator=g) / np.sqrt(h)).requires_grad_()
        B1, B2 = torch.zeros(h, rank, requires_grad=True), torch.zeros(D, rank, requires_grad=True)
        Xt, dt = torch.from_numpy(X[tr]), torch.from_numpy(days[tr])
        opt = torch.optim.Adam([A1, B1, A2, B2, b1, b2], lr=lr)
        loss, t0 = float("nan"), _time.perf_counter()
        for _ in range(steps):
            idx = torch.randint(0, len(tr), (min(batch, len(tr)),), generator=g)
            Z = _forward(torch, Xt[idx], W1b + B1 @ A1, b1, W2b + B2 @ A2, b2)
            d = (dt[idx, None] - dt[None, idx]).abs() / ell
            K = (torch.exp(-d) if kernel == "laplace" else torch.exp(-0.5 * d * d)).float()
            obj = sum(_cka(torch, Z[:, :s], K) for s in prefixes) / len(prefixes)
            opt.zero_grad()
            (-obj).backward()
            opt.step()
            loss = -float(obj.detach())
        seconds = _time.perf_counter() - t0
        with torch.no_grad():
            mlp = {"W1": W1b + B1 @ A1, "b1": b1, "W2": W2b + B2 @ A2, "b2": b2}
            mlp = {k: v.detach().numpy().astype(np.float32) for k, v in mlp.items()}
    finally:
        torch.set_num_threads(threads)

    out = TemporalEncoder(None, encoder.periods, alpha=cfg["alpha"], modalities=mods or None,
                          modality_weight=cfg["modality_weight"], mlp=mlp,
                          providers=encoder._providers_arg, threads=encoder._threads)
    cka1, rho1, near1 = evaluate(out.reference(t[ev], None if modality is None else [modality[i] for i in ev]))
    mean = lambda c: float(np.mean(list(c.values())))
    report = {"kernel": kernel, "length_scale_days": ell, "prefixes": list(prefixes), "hidden": h,
              "rank": rank, "steps": steps, "seconds": seconds, "train_rows": len(tr), "heldout_rows": n_ev,
              "heldout_pairs": len(pi), "final_loss": loss,
              "cka_before": cka0, "cka_after": cka1, "mean_cka_before": mean(cka0), "mean_cka_after": mean(cka1),
              "spearman_before": rho0, "spearman_after": rho1, "near_pairs": int(near.sum()),
              "spearman_near_before": near0, "spearman_near_after": near1}
    return out, report


def _forward(torch, X, W1, b1, W2, b2):
    y = X + torch.tanh(X @ W1.T + b1) @ W2.T + b2
    return y / y.norm(dim=1, keepdim=True)


def _cka(torch, Z, K):
    Zc = Z - Z.mean(dim=0)
    L = Zc @ Zc.T
    Kc = K - K.mean(dim=0) - K.mean(dim=1, keepdim=True) + K.mean()
    return (L * Kc).sum() / torch.sqrt((L * L).sum() * (Kc * Kc).sum())
