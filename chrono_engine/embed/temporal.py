"""Layer 1: the temporal encoder f_temp(t, m), an ONNX graph run by ONNX Runtime.

The encoding of an instant t (µs since the epoch, int64) is, for periods P_1 > ... > P_K,

    x(t) = [w_1 sin φ_1, w_1 cos φ_1, ..., w_K sin φ_K, w_K cos φ_K, μ·onehot(m)],
    φ_k  = 2π (t mod P_k) / P_k,

so <x(t), x(t')> = Σ_k w_k² cos(2π (t − t') / P_k) (+ μ² when the modalities agree): a
stationary kernel of the time difference. The phase is reduced *exactly* in int64 before
any float arithmetic, so an hour-period component of a timestamp in 2026 is as precise as
one near 1970 (a float32 phase would be off by a quarter turn). With w_k² ∝ P_k^α (α = 1
by default) the long periods dominate and the kernel falls monotonically in |t − t'| up to
half the longest period; the short periods separate nearby instants. Periods are ordered
longest first, so every prefix of the block is itself a coarser encoding (Matryoshka).

An optional MLP (``x + W2 tanh(W1 x + b1) + b2``, then L2 normalisation) follows; the
untrained encoder has none (the block is unit-norm by construction). Training with LoRA and
a CKA objective lives in :mod:`chrono_engine.embed.train` (extra ``[train]``).

The graph is built with ``onnx.helper`` (no torch) and run by ONNX Runtime;
:meth:`TemporalEncoder.reference` evaluates the same graph in NumPy (float32).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import EmbeddingError, ModelFileError
from . import _runtime
from ._times import as_utc_us

__all__ = ["TemporalEncoder", "DEFAULT_MIN_PERIOD", "DEFAULT_MAX_PERIOD"]

_US = {"s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000, "d": 86_400_000_000,
       "w": 604_800_000_000, "y": 31_556_952_000_000}  # y: mean Gregorian year
DEFAULT_MIN_PERIOD = _dt.timedelta(hours=1)
DEFAULT_MAX_PERIOD = _dt.timedelta(days=400 * 365.2425)  # monotone up to |Δt| = 200 years
_META_KEY = "chrono_engine.temporal_encoder"
_OPSET = 17
_CHUNK = 1 << 20  # rows per session call: bounds the int64 [n, K] intermediates


def _period_us(p: Any, where: str) -> int:
    if isinstance(p, _dt.timedelta):
        us = (p.days * 86_400 + p.seconds) * 1_000_000 + p.microseconds
    elif isinstance(p, str):
        s = p.strip().lower()
        unit = s[-1:]
        try:
            val = float(s[:-1])
        except ValueError:
            val = None
        if unit not in _US or val is None:
            raise EmbeddingError(f"{where}: cannot read period {p!r} (use e.g. '1h', '30d', '10y' "
                                 "or a datetime.timedelta)")
        us = int(round(val * _US[unit]))
    elif isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, (bool, np.bool_)):
        if not np.isfinite(p):
            raise EmbeddingError(f"{where}: period must be finite, got {p!r}")
        us = int(round(float(p) * 1_000_000))  # numbers are seconds
    else:
        raise EmbeddingError(f"{where}: a period is a timedelta, a string like '30d' or seconds, got {p!r}")
    if us <= 0:
        raise EmbeddingError(f"{where}: a period must be positive, got {p!r}")
    return us


class TemporalEncoder:
    """Multi-scale sinusoidal time encoding (+ optional modality one-hot and MLP) served
    by ONNX Runtime.

    Parameters
    ----------
    dim : width t of the temporal block. Without ``scales`` it sets the number of periods,
        ``(dim - len(modalities)) / 2`` (must be a whole number), spaced geometrically
        from ``min_period`` to ``max_period``.
    scales : explicit periods (``timedelta``, strings like ``"1h"``, ``"30d"``, ``"10y"``,
        or seconds), any order; ``dim`` may then be omitted.
    min_period, max_period : the default geometric range (1 hour to 400 years).
    alpha : weight exponent: w_k² ∝ P_k^alpha, normalised so the block has unit norm.
    modalities : names of source modalities encoded as a one-hot of weight
        ``modality_weight`` (None: no modality input).
    mlp : None (untrained, the default) or trained weights from
        :func:`chrono_engine.embed.train.train_temporal` (``W1``, ``b1``, ``W2``, ``b2``).
    providers : ``"auto"`` (CUDA when this onnxruntime has it, else CPU), a provider name
        or a list; CPU is always the fallback.
    threads : onnxruntime intra-op threads (None/0: its default, all cores).

    >>> import numpy as np, chrono_engine as ce
    >>> enc = ce.TemporalEncoder(dim=16)
    >>> x = enc.encode(np.array(["2026-01-01T00:00", "2026-01-02T00:00"], "datetime64[us]"))
    >>> x.shape, x.dtype, round(float(np.linalg.norm(x[0])), 5)
    ((2, 16), dtype('float32'), 1.0)
    """

    def __init__(self, dim: int | None = 32, scales: Sequence[Any] | None = None, *,
                 min_period: Any = DEFAULT_MIN_PERIOD, max_period: Any = DEFAULT_MAX_PERIOD,
                 alpha: float = 1.0, modalities: Sequence[str] | None = None,
                 modality_weight: float = 0.5, mlp: dict | None = None,
                 providers: Any = "auto", threads: int | None = None) -> None:
        mods = list(modalities) if modalities is not None else []
        if any(not isinstance(m, str) or not m for m in mods) or len(set(mods)) != len(mods):
            raise EmbeddingError(f"modalities must be distinct non-empty strings, got {modalities!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not np.isfinite(alpha):
            raise EmbeddingError(f"alpha must be a finite number, got {alpha!r}")
        if isinstance(modality_weight, bool) or not isinstance(modality_weight, (int, float)) \
                or not modality_weight > 0 or not np.isfinite(modality_weight):
            raise EmbeddingError(f"modality_weight must be a positive number, got {modality_weight!r}")
        if scales is not None:
            if isinstance(scales, (str, bytes)) or not hasattr(scales, "__len__") or len(scales) == 0:
                raise EmbeddingError(f"scales must be a non-empty sequence of periods, got {scales!r}")
            periods = sorted({_period_us(p, f"scales[{i}]") for i, p in enumerate(scales)}, reverse=True)
            if len(periods) != len(scales):
                raise EmbeddingError("scales: two periods are equal")
            if dim is not None and dim != 2 * len(periods) + len(mods):
                raise EmbeddingError(f"dim={dim} but {len(periods)} periods and {len(mods)} modalities "
                                     f"give {2 * len(periods) + len(mods)} dimensions")
        else:
            if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim - len(mods) < 2 \
                    or (dim - len(mods)) % 2:
                raise EmbeddingError(f"dim must be an integer with dim - len(modalities) even and >= 2, got {dim!r}")
            lo, hi = _period_us(min_period, "min_period"), _period_us(max_period, "max_period")
            if not lo < hi:
                raise EmbeddingError("min_period must be shorter than max_period")
            k = (int(dim) - len(mods)) // 2
            periods = sorted({int(round(p)) for p in np.geomspace(lo, hi, k)}, reverse=True)
            if len(periods) != k:
                raise EmbeddingError("min_period..max_period is too narrow for this many periods")
        self._periods = np.array(periods, dtype=np.int64)
        self._alpha = float(alpha)
        self._modalities = mods
        self._mu = float(modality_weight)
        w2 = (self._periods / self._periods[0]).astype(np.float64) ** self._alpha
        total = w2.sum() + (self._mu ** 2 if mods else 0.0)
        self._weights = np.sqrt(w2 / total).astype(np.float32)
        self._mu_n = np.float32(self._mu / np.sqrt(total))
        self._mlp = _check_mlp(mlp, self.dim) if mlp is not None else None
        self._providers_arg, self._threads = providers, threads
        self._model = self._build()
        self._session = _runtime.session(self._model.SerializeToString(), providers=providers, threads=threads)

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        """Width t of the temporal block."""
        return 2 * len(self._periods) + len(self._modalities)

    @property
    def periods(self) -> list[_dt.timedelta]:
        """The periods, longest first."""
        return [_dt.timedelta(microseconds=int(p)) for p in self._periods]

    @property
    def modalities(self) -> list[str]:
        return list(self._modalities)

    @property
    def trained(self) -> bool:
        """Whether an MLP follows the sinusoidal features."""
        return self._mlp is not None

    @property
    def providers(self) -> list[str]:
        """The execution providers of the live session, in priority order."""
        return list(self._session.get_providers())

    @property
    def onnx_model(self):
        """The graph as an ``onnx.ModelProto``."""
        return self._model

    def config(self) -> dict:
        """Everything that defines the graph (JSON-serialisable; stored in the model)."""
        cfg = {"periods_us": [int(p) for p in self._periods], "alpha": self._alpha,
               "modalities": self._modalities, "modality_weight": self._mu}
        if self._mlp is not None:
            cfg["mlp"] = {k: np.asarray(v).tolist() for k, v in self._mlp.items()}
        return cfg

    def __repr__(self) -> str:
        p = self._periods
        return (f"TemporalEncoder(dim={self.dim}, periods={len(p)} from {_fmt(p[-1])} to {_fmt(p[0])}, "
                f"alpha={self._alpha}, modalities={self._modalities or None}, trained={self.trained})")

    # ------------------------------------------------------------------ encode
    def _inputs(self, times: Any, modality: Any) -> tuple[np.ndarray, np.ndarray | None]:
        t = as_utc_us(times, "times")
        if not self._modalities:
            if modality is not None:
                raise EmbeddingError("modality given but this encoder has no modalities "
                                     "(construct it with modalities=[...])")
            return t, None
        if modality is None:
            raise EmbeddingError(f"modality is required (one of {self._modalities} per row)")
        code = {m: i for i, m in enumerate(self._modalities)}
        if isinstance(modality, str):
            modality = [modality] * len(t)
        mods = list(modality)
        if len(mods) != len(t):
            raise EmbeddingError(f"modality has {len(mods)} rows but times has {len(t)}")
        out = np.empty(len(t), np.int64)
        for i, m in enumerate(mods):
            if m not in code:
                raise EmbeddingError(f"modality[{i}]: unknown modality {m!r} (known: {self._modalities})")
            out[i] = code[m]
        return t, out

    def encode(self, times: Any, modality: Any = None) -> np.ndarray:
        """Encode a batch of instants -> float32 array (n, dim).

        ``times``: a batch of instants read by the package's one rule for times
        (:mod:`chrono_engine._time`, as at ingest and search): datetime64, int64 µs,
        datetimes or ISO-8601 strings (naive ones, and strings without an offset, are UTC),
        Arrow timestamp arrays or pandas Series.
        ``modality``: one name or one per row when the encoder has modalities.
        """
        t, m = self._inputs(times, modality)
        out = np.empty((len(t), self.dim), np.float32)
        for a in range(0, len(t), _CHUNK):
            feed = {"time": t[a:a + _CHUNK]}
            if m is not None:
                feed["modality"] = m[a:a + _CHUNK]
            out[a:a + _CHUNK] = self._session.run(["temporal"], feed)[0]
        return out

    __call__ = encode

    def reference(self, times: Any, modality: Any = None) -> np.ndarray:
        """The same graph evaluated in NumPy (float32 throughout, as the graph)."""
        x = self.features(times, modality)
        if self._mlp is not None:
            W1, b1, W2, b2 = (self._mlp[k] for k in ("W1", "b1", "W2", "b2"))
            h = np.tanh(x @ W1.T + b1)
            y = x + h @ W2.T + b2
            x = y / np.sqrt((y * y).sum(axis=1, keepdims=True))
        return x.astype(np.float32)

    def features(self, times: Any, modality: Any = None) -> np.ndarray:
        """The sinusoidal (+ one-hot) features before the MLP (NumPy, float32)."""
        t, m = self._inputs(times, modality)
        r = (t[:, None] % self._periods[None, :]).astype(np.float32)
        ph = r * (2 * np.pi / self._periods).astype(np.float32)
        x = np.stack([np.sin(ph) * self._weights, np.cos(ph) * self._weights], axis=2).reshape(len(t), -1)
        if m is not None:
            x = np.concatenate([x, (np.eye(len(self._modalities), dtype=np.float32) * self._mu_n)[m]], axis=1)
        return x.astype(np.float32)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the ONNX model (its configuration rides in the model's metadata)."""
        Path(path).write_bytes(self._model.SerializeToString())

    @classmethod
    def load(cls, path: str | os.PathLike, *, providers: Any = "auto", threads: int | None = None
             ) -> "TemporalEncoder":
        """Read a model written by :meth:`save` (ModelFileError if missing or corrupted)."""
        onnx = _runtime.onnx()
        data = _runtime.read_model_file(path, "temporal encoder model")
        try:
            model = onnx.load_model_from_string(data)
            onnx.checker.check_model(model)
        except Exception as e:
            raise ModelFileError(f"{str(path)!r} is not a valid ONNX model ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0][:200] if str(e) else ''})", path=str(path)) from None
        meta = {p.key: p.value for p in model.metadata_props}
        if _META_KEY not in meta:
            raise ModelFileError(f"{str(path)!r} is an ONNX model but not a chrono_engine temporal encoder "
                                 f"(no {_META_KEY!r} metadata)", path=str(path))
        try:
            cfg = json.loads(meta[_META_KEY])
            mlp = {k: np.asarray(v, np.float32) for k, v in cfg["mlp"].items()} if "mlp" in cfg else None
            enc = cls(None, [p / 1e6 for p in cfg["periods_us"]], alpha=cfg["alpha"],
                      modalities=cfg["modalities"] or None, modality_weight=cfg["modality_weight"],
                      mlp=mlp, providers=providers, threads=threads)
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"{str(path)!r}: unreadable encoder configuration ({e})", path=str(path)) from None
        if enc._model.graph.SerializeToString() != model.graph.SerializeToString():
            raise ModelFileError(f"{str(path)!r}: the graph does not match its stored configuration "
                                 "(edited after export?)", path=str(path))
        return enc

    # ------------------------------------------------------------------ graph
    def _build(self):
        onnx = _runtime.onnx()
        TP, h, nh = onnx.TensorProto, onnx.helper, onnx.numpy_helper

        K, D = len(self._periods), self.dim
        inits = [nh.from_array(np.array([1], np.int64), "axis1"),
                 nh.from_array(np.array([2], np.int64), "axis2"),
                 nh.from_array(self._periods, "periods"),
                 nh.from_array((2 * np.pi / self._periods).astype(np.float32), "freq"),
                 nh.from_array(self._weights, "weights"),
                 nh.from_array(np.array([-1, 2 * K], np.int64), "shape")]
        nodes = [h.make_node("Unsqueeze", ["time", "axis1"], ["t2"]),
                 h.make_node("Mod", ["t2", "periods"], ["rem"], fmod=0),  # exact, in int64
                 h.make_node("Cast", ["rem"], ["remf"], to=TP.FLOAT),
                 h.make_node("Mul", ["remf", "freq"], ["phase"]),
                 h.make_node("Sin", ["phase"], ["sin"]),
                 h.make_node("Cos", ["phase"], ["cos"]),
                 h.make_node("Mul", ["sin", "weights"], ["sinw"]),
                 h.make_node("Mul", ["cos", "weights"], ["cosw"]),
                 h.make_node("Unsqueeze", ["sinw", "axis2"], ["sin3"]),
                 h.make_node("Unsqueeze", ["cosw", "axis2"], ["cos3"]),
                 h.make_node("Concat", ["sin3", "cos3"], ["pairs"], axis=2),
                 h.make_node("Reshape", ["pairs", "shape"], ["sincos"])]
        inputs = [h.make_tensor_value_info("time", TP.INT64, ["n"])]
        x = "sincos"
        if self._modalities:
            inputs.append(h.make_tensor_value_info("modality", TP.INT64, ["n"]))
            inits.append(nh.from_array(np.eye(len(self._modalities), dtype=np.float32) * self._mu_n, "onehot"))
            nodes += [h.make_node("Gather", ["onehot", "modality"], ["mod"], axis=0),
                      h.make_node("Concat", ["sincos", "mod"], ["features"], axis=1)]
            x = "features"
        if self._mlp is None:
            nodes.append(h.make_node("Identity", [x], ["temporal"]))
        else:
            for k in ("W1", "b1", "W2", "b2"):
                v = self._mlp[k]
                inits.append(nh.from_array(np.ascontiguousarray(v.T if k[0] == "W" else v), k))
            nodes += [h.make_node("MatMul", [x, "W1"], ["xw1"]),
                      h.make_node("Add", ["xw1", "b1"], ["pre"]),
                      h.make_node("Tanh", ["pre"], ["hid"]),
                      h.make_node("MatMul", ["hid", "W2"], ["hw2"]),
                      h.make_node("Add", [x, "hw2"], ["res"]),
                      h.make_node("Add", ["res", "b2"], ["y"]),
                      h.make_node("LpNormalization", ["y"], ["temporal"], axis=1, p=2)]
        graph = h.make_graph(nodes, "chrono_temporal_encoder", inputs,
                             [h.make_tensor_value_info("temporal", TP.FLOAT, ["n", D])], inits)
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", _OPSET)],
                             producer_name="chrono_engine")
        model.ir_version = 8  # readable by every onnxruntime >= 1.10
        h.set_model_props(model, {_META_KEY: json.dumps(self.config())})
        onnx.checker.check_model(model)
        return model


def _check_mlp(mlp: dict, dim: int) -> dict:
    try:
        W1, b1, W2, b2 = (np.ascontiguousarray(mlp[k], dtype=np.float32) for k in ("W1", "b1", "W2", "b2"))
    except KeyError as e:
        raise EmbeddingError(f"mlp: missing weight {e.args[0]!r} (need W1, b1, W2, b2)") from None
    hdim = W1.shape[0] if W1.ndim == 2 else -1
    if W1.shape != (hdim, dim) or b1.shape != (hdim,) or W2.shape != (dim, hdim) or b2.shape != (dim,):
        raise EmbeddingError(f"mlp: shapes W1 {W1.shape}, b1 {b1.shape}, W2 {W2.shape}, b2 {b2.shape} "
                             f"do not fit dim={dim} (W1 (h, dim), b1 (h,), W2 (dim, h), b2 (dim,))")
    for k, v in (("W1", W1), ("b1", b1), ("W2", W2), ("b2", b2)):
        if not np.isfinite(v).all():
            raise EmbeddingError(f"mlp: {k} has non-finite values")
    return {"W1": W1, "b1": b1, "W2": W2, "b2": b2}


def _fmt(us: int) -> str:
    for unit in ("y", "d", "h", "m", "s"):
        if us >= _US[unit]:
            v = us / _US[unit]
            return f"{v:.3g}{unit}"
    return f"{us}us"
