"""How the Engine calls a text embedder that is not time-aware.

An Engine's ``embedder`` is either a time-aware :class:`~chrono_engine.TemporalEmbedder`
(it has ``embed(texts, times)`` and ``embed_query(text, at)``) or a plain text embedder:
any callable ``str -> vector``, such as :class:`~chrono_engine.TextEncoder` or a function.
A plain embedder with an ``encode`` method (``TextEncoder``, sentence-transformers models)
embeds a batch of texts in one ``encode(list[str]) -> (n, d)`` call; any other is called
once per text. Its width is its ``dim`` attribute, else the length of one probe vector.
This module does not import the embedding layer (ONNX Runtime stays unloaded).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._args import as_float32, shown
from .errors import EmbeddingError

__all__ = ["is_temporal", "declared_dim", "embedder_dim", "text_vectors"]

#: the text a plain embedder without a ``dim`` attribute is probed with, once
PROBE_TEXT = "dimension probe"


def is_temporal(embedder: Any) -> bool:
    """Whether ``embedder`` embeds at a time (a :class:`~chrono_engine.TemporalEmbedder`)."""
    return hasattr(embedder, "embed") and hasattr(embedder, "embed_query")


def declared_dim(embedder: Any) -> int | None:
    """The embedder's ``dim`` attribute when it is a positive integer, else None."""
    d = getattr(embedder, "dim", None)
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d <= 0:
        return None
    return int(d)


def embedder_dim(embedder: Any) -> int:
    """The width of ``embedder``'s vectors: its ``dim`` attribute, else one probe call.
    Raises EmbeddingError when neither gives a width."""
    d = declared_dim(embedder)
    if d is not None:
        return d
    if not callable(embedder) and not callable(getattr(embedder, "encode", None)):
        raise EmbeddingError(f"the embedder must be callable (str -> vector) or a TemporalEmbedder, "
                             f"got {type(embedder).__name__}")
    return int(text_vectors(embedder, [PROBE_TEXT]).shape[1])


def _embedding_error(row: int | None, detail: str) -> None:
    raise EmbeddingError(detail if row is None else f"texts[{row}]: {detail}")


def text_vectors(embedder: Any, texts: list[str],
                 fail: Callable[[int | None, str], None] = _embedding_error) -> np.ndarray:
    """The float32 (n, d) vectors of ``texts`` from a plain embedder: one ``encode(texts)``
    call when it has ``encode``, else one call per text. A vector that is not a 1-D array
    of numbers of the batch's width calls ``fail(row, detail)`` (row None: the batch
    call), which raises; by default an EmbeddingError naming ``texts[row]``."""
    encode = getattr(embedder, "encode", None)
    if callable(encode):
        try:
            out = as_float32(encode(texts))
        except (TypeError, ValueError) as e:
            fail(None, f"the embedder's encode(texts) failed or returned a non-array: {shown(str(e))}")
        if out.ndim != 2 or out.shape[0] != len(texts) or out.shape[1] == 0:
            fail(None, f"the embedder's encode(texts) returned shape {out.shape}, expected ({len(texts)}, d)")
        return out
    rows: list[np.ndarray] = []
    for i, text in enumerate(texts):
        try:
            v = as_float32(embedder(text))
        except (TypeError, ValueError) as e:
            fail(i, f"the embedder failed or returned a non-vector: {shown(str(e))}")
        if v.ndim != 1 or v.shape[0] == 0 or (rows and v.shape != rows[0].shape):
            fail(i, f"the embedder returned shape {v.shape}, expected {f'({rows[0].shape[0]},)' if rows else '(d,)'}")
        rows.append(v)
    return np.stack(rows)
