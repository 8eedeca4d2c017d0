"""Composition e = [λ·e_temp ; e_sem] / sqrt(1 + λ²) and Matryoshka truncation.

Both blocks are unit vectors before weighting, so <e, e'> = (λ² s_temp + s_sem) / (1 + λ²):
the temporal block's share of every similarity is fixed by λ and cannot be washed out by
semantics. :func:`truncate` keeps the first m ≥ t dimensions and rescales the semantic
remainder to the norm it had, so the temporal share survives every truncation and, for
items at the same time, the order is the order of the truncated semantic cosine.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa

from .._columns import is_series
from .._time import errors_as, scalar_us
from ..errors import EmbeddingError
from . import _runtime
from .temporal import TemporalEncoder

__all__ = ["TemporalEmbedder", "truncate", "compose_blocks"]


def truncate(e: Any, m: int, *, temporal_dim: int) -> np.ndarray:
    """Matryoshka truncation of composed embeddings to ``m`` dimensions (m ≥ temporal_dim).

    The temporal block (the first ``temporal_dim`` columns) is kept as it is; the semantic
    columns ``temporal_dim:m`` are rescaled to the semantic block's full norm
    ``sqrt(1 − |e_temp|²)``, so rows stay unit-norm (at ``m == temporal_dim`` the
    temporal block itself is scaled to unit norm; a row whose kept semantic columns are
    all zero keeps its temporal block as it is).
    """
    a = np.asarray(e, dtype=np.float32)
    one = a.ndim == 1
    a = np.atleast_2d(a)
    if a.ndim != 2:
        raise EmbeddingError(f"e: expected one vector or a 2-D batch, got shape {np.shape(e)}")
    d = a.shape[1]
    if isinstance(temporal_dim, bool) or not isinstance(temporal_dim, (int, np.integer)) \
            or not 0 < temporal_dim <= d:
        raise EmbeddingError(f"temporal_dim must be in 1..{d}, got {temporal_dim!r}")
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not temporal_dim <= m <= d:
        raise EmbeddingError(f"m must be an integer in [{temporal_dim}, {d}] (the temporal block is "
                             f"never cut), got {m!r}")
    t = int(temporal_dim)
    out = a[:, :m].copy()
    if m > t:
        temp2 = np.einsum("ij,ij->i", a[:, :t], a[:, :t], dtype=np.float64)
        sem = out[:, t:].astype(np.float64)
        have = np.sqrt(np.einsum("ij,ij->i", sem, sem))
        want = np.sqrt(np.clip(1.0 - temp2, 0.0, None))
        scale = np.divide(want, have, out=np.zeros_like(want), where=have > 0)
        out[:, t:] = (sem * scale[:, None]).astype(np.float32)
    else:  # only the temporal block is left: it becomes the unit vector
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norm, out=out, where=norm > 0)
    return out[0] if one else out


def compose_blocks(temp: np.ndarray, sem: np.ndarray, weight: float) -> np.ndarray:
    """[λ·temp ; sem] / sqrt(1 + λ²) for unit-row blocks (float32)."""
    c = np.float32(1.0 / np.sqrt(1.0 + weight ** 2))
    out = np.empty((len(temp), temp.shape[1] + sem.shape[1]), np.float32)
    out[:, :temp.shape[1]] = temp * np.float32(weight) * c
    out[:, temp.shape[1]:] = sem * c
    return out


def _semantic(text: Any) -> tuple[Callable[[list[str]], np.ndarray], int | None]:
    if text is None or isinstance(text, str) or hasattr(text, "__fspath__"):
        from .text import TextEncoder
        enc = TextEncoder(model=text)
        return enc.encode, enc.dim
    if hasattr(text, "encode") and hasattr(text, "dim"):
        return text.encode, int(text.dim)
    if callable(text):
        return text, None
    raise EmbeddingError(f"text must be a TextEncoder, an ONNX model path, a callable "
                         f"(list[str] -> (n, d) array) or None, got {type(text).__name__}")


class TemporalEmbedder:
    """e = [λ·e_temp ; e_sem] / sqrt(1 + λ²): a time-aware embedding with a reserved
    temporal subspace in the first ``temporal.dim`` dimensions.

    Parameters
    ----------
    text : :class:`TextEncoder`, a path to an ONNX text encoder, or any callable
        ``list[str] -> (n, d)`` array (None: the default all-MiniLM-L6-v2).
    temporal : :class:`TemporalEncoder` (None: ``TemporalEncoder(dim=32)``).
    weight : λ ≥ 0, the temporal block's weight (its share of a similarity is
        λ² / (1 + λ²)).

    ``Engine(embedder=...)`` ingests rows with ``content`` and a time and no ``vector``;
    ``engine.query(text)`` embeds the question at its query time.
    """

    def __init__(self, text: Any = None, temporal: TemporalEncoder | None = None, *,
                 weight: float = 1.0) -> None:
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.integer, np.floating)) \
                or not np.isfinite(weight) or weight < 0:
            raise EmbeddingError(f"weight must be a finite number >= 0, got {weight!r}")
        if temporal is None:
            temporal = TemporalEncoder(dim=32)
        if not isinstance(temporal, TemporalEncoder):
            raise EmbeddingError(f"temporal must be a TemporalEncoder, got {type(temporal).__name__}")
        self.temporal = temporal
        self._text, self._sem_dim = _semantic(text)
        self.weight = float(weight)

    @property
    def temporal_dim(self) -> int:
        """t: the first t dimensions are the temporal block."""
        return self.temporal.dim

    @property
    def dim(self) -> int:
        """Full width t + d (known after the first call for a plain callable)."""
        if self._sem_dim is None:
            self._sem_dim = self._semantic_block(["dimension probe"]).shape[1]
        return self.temporal.dim + self._sem_dim

    def __repr__(self) -> str:
        return f"TemporalEmbedder(temporal_dim={self.temporal_dim}, semantic_dim={self._sem_dim}, weight={self.weight})"

    def _semantic_block(self, texts: list[str]) -> np.ndarray:
        try:
            s = np.asarray(self._text(texts), dtype=np.float32)
        except EmbeddingError:
            raise
        except (TypeError, ValueError) as e:
            raise EmbeddingError(f"the text encoder failed or returned a non-array: {e}") from None
        if s.ndim != 2 or s.shape[0] != len(texts) or (self._sem_dim is not None and s.shape[1] != self._sem_dim):
            raise EmbeddingError(f"the text encoder returned shape {s.shape}, expected ({len(texts)}, "
                                 f"{self._sem_dim if self._sem_dim is not None else 'd'})")
        norms = np.linalg.norm(s, axis=1)
        bad = ~np.isfinite(norms) | (norms == 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise EmbeddingError(f"the text encoder returned a zero or non-finite vector for texts[{row}]")
        return s / norms[:, None]

    def embed(self, texts: Sequence[str], times: Any, modality: Any = None) -> np.ndarray:
        """Embed texts at their times -> float32 (n, t + d), unit rows."""
        texts = _runtime.text_batch(texts)
        temp = self.temporal.encode(times, modality)
        if len(temp) != len(texts):
            raise EmbeddingError(f"times has {len(temp)} rows but texts has {len(texts)}")
        sem = self._semantic_block(texts)
        self._sem_dim = sem.shape[1]
        return compose_blocks(temp, sem, self.weight)

    def embed_query(self, text: str, at: Any, modality: str | None = None) -> np.ndarray:
        """One query text at one instant -> float32 (t + d,). With modalities, the query
        is encoded as ``modality`` (default: the encoder's first one).

        ``at`` is read by the rule of every time argument (:mod:`chrono_engine._time`, the
        function ``search`` reads ``as_of`` with): naive datetimes and strings without an
        offset are UTC, ``"2005-01-01"`` is its midnight UTC, integers are µs; a one-element
        batch (list or array) is accepted too. A bad one is an EmbeddingError naming ``at``.
        """
        if not isinstance(text, str):
            raise EmbeddingError(f"text must be a string, got {type(text).__name__}")
        mods = self.temporal.modalities
        if mods and modality is None:
            modality = mods[0]
        if isinstance(at, np.ndarray) and at.ndim == 0:
            at = at[()]
        if not isinstance(at, (list, tuple, np.ndarray, pa.Array, pa.ChunkedArray)) and not is_series(at):
            with errors_as(EmbeddingError):
                at = np.array([scalar_us(at, "at", stored=True)], np.int64)
        return self.embed([text], at, modality=modality)[0]

    def truncate(self, e: Any, m: int) -> np.ndarray:
        """:func:`truncate` with this embedder's temporal width."""
        return truncate(e, m, temporal_dim=self.temporal_dim)
