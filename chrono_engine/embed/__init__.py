"""Layer 1: temporal-subspace embeddings served by ONNX Runtime.

- :class:`TemporalEncoder` — multi-scale sinusoidal time encoding (+ modality one-hot,
  optional trained MLP) as an ONNX graph;
- :class:`TextEncoder` — an offline ONNX sentence encoder (all-MiniLM-L6-v2, int8) with
  its WordPiece tokenizer (extra ``[text]``), or any ONNX model / Python callable;
- :class:`TemporalEmbedder` — e = [λ·e_temp ; e_sem], normalised, with Matryoshka
  :meth:`~TemporalEmbedder.truncate` that always keeps the temporal block;
- :mod:`chrono_engine.embed.train` — LoRA + CKA training of the MLP (extra ``[train]``).
"""
from __future__ import annotations

from .compose import TemporalEmbedder, truncate
from .temporal import TemporalEncoder
from .text import TextEncoder

__all__ = ["TemporalEncoder", "TextEncoder", "TemporalEmbedder", "truncate"]
