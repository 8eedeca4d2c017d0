"""ONNX Runtime sessions: provider choice, thread settings, readable load errors."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from .._util import import_extra
from ..errors import EmbeddingError, ModelFileError

#: Providers tried in this order by ``providers="auto"``: CUDA when this onnxruntime build
#: has it, then CPU (always present, so every session can fall back to it).
PREFERENCE = ("CUDAExecutionProvider", "CPUExecutionProvider")


def _extra(module: str):
    """``module`` of the ``[embed]`` extra, imported on first use (:func:`import_extra`)."""
    return import_extra(module, "embed", "chrono_engine.embed")


def onnxruntime():
    """The ``onnxruntime`` package (sessions), from the ``[embed]`` extra."""
    return _extra("onnxruntime")


def onnx():
    """The ``onnx`` package (graph building and checking), from the ``[embed]`` extra."""
    return _extra("onnx")


def choose_providers(providers: Any = "auto", available: Sequence[str] | None = None) -> list[str]:
    """The provider list for a session.

    ``"auto"`` (or None): CUDA when ``available`` (default: what this onnxruntime build
    offers) has it, then CPU. A name or list of names is used as given, in order, each
    checked against ``available``; CPU is appended as the fallback when missing.
    """
    if available is None:
        available = onnxruntime().get_available_providers()
    available = list(available)
    if providers is None or providers == "auto":
        chosen = [p for p in PREFERENCE if p in available]
        return chosen or ["CPUExecutionProvider"]
    if isinstance(providers, str):
        providers = [providers]
    chosen = []
    for p in providers:
        if not isinstance(p, str):
            raise EmbeddingError(f"providers: expected provider names, got {p!r}")
        if p not in available:
            raise EmbeddingError(f"providers: {p!r} is not in this onnxruntime build "
                                 f"(available: {', '.join(available)})")
        if p not in chosen:
            chosen.append(p)
    if "CPUExecutionProvider" not in chosen:
        chosen.append("CPUExecutionProvider")
    return chosen


def session(model: Any, *, providers: Any = "auto", threads: int | None = None,
            path: str | None = None):
    """An ``InferenceSession`` over serialized model bytes or a file path."""
    ort = onnxruntime()
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 0):
        raise EmbeddingError(f"threads must be a non-negative integer (0: onnxruntime's default), got {threads!r}")
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads or 0)
    so.inter_op_num_threads = 1
    so.log_severity_level = 3  # errors only; provider fallbacks are reported by us
    try:
        return ort.InferenceSession(model, so, providers=choose_providers(providers))
    except EmbeddingError:
        raise
    except Exception as e:  # onnxruntime raises its own Fail / InvalidGraph / InvalidProtobuf
        where = path or "<in-memory model>"
        raise ModelFileError(f"{where}: onnxruntime cannot load it ({type(e).__name__}: "
                             f"{str(e).splitlines()[0][:300]})", path=path) from None


def read_model_file(path: str | os.PathLike, what: str = "ONNX model") -> bytes:
    """The bytes of a model file, or ModelFileError saying why not."""
    p = Path(path)
    if not p.exists():
        raise ModelFileError(f"{what} {str(p)!r} does not exist", path=str(p))
    if not p.is_file():
        raise ModelFileError(f"{what} {str(p)!r} is not a file", path=str(p))
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ModelFileError(f"{what} {str(p)!r} cannot be read: {e.strerror}", path=str(p)) from None
    if not data:
        raise ModelFileError(f"{what} {str(p)!r} is empty", path=str(p))
    return data


def text_batch(texts: Any) -> list[str]:
    """A non-empty list of strings, or EmbeddingError naming the bad row."""
    if isinstance(texts, str):
        raise EmbeddingError("texts: expected a sequence of strings, got one string (wrap it in a list)")
    texts = list(texts)
    if not texts:
        raise EmbeddingError("texts: empty batch (nothing to encode)")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise EmbeddingError(f"texts[{i}]: expected a string, got {type(t).__name__}")
    return texts
