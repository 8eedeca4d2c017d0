"""Layer 3 of the paper: STL verification of knowledge validity (section III-D).

- :func:`verify_chains`: robustness ρ = min_i (v(s_i) − γ), weakest-link bound, weakest
  step and fact, and re-acquisition targets for many reasoning chains at once (Numba,
  parallel over chains); :func:`verify_hits` does the same for retrieved context.
- :class:`ValidityMonitor`: the online form, fed step by step, with a lag window L.
- :mod:`chrono_engine.verify.stl`: bounded STL formulas (RTAMT syntax) evaluated on many
  traces, ``stl.robustness("G[0,5](v >= 0.3)", {"v": traces})``.

NumPy references for the kernels live beside them (:mod:`.chains_reference`,
:mod:`.stl.reference`); tests compare the two for exact equality.
"""
from __future__ import annotations

from . import stl
from .chains import REPORT_SCHEMA, verify_chains, verify_hits
from .chains_reference import verify_chains_reference
from .csr import ChainBatch
from .monitor import MonitorEvent, ValidityMonitor
from .stl import STLSyntaxError

__all__ = ["verify_chains", "verify_hits", "verify_chains_reference", "ChainBatch",
           "ValidityMonitor", "MonitorEvent", "REPORT_SCHEMA", "STLSyntaxError", "stl"]
