"""chrono_engine: a temporal-validity retrieval engine for retrieval-augmented generation.

Stores timestamped, versioned evidence beside its vectors (bitemporal: valid time and
transaction time), scores freshness with principled decay, and answers "valid now",
"valid at T", "as known at T'" and "within a window" queries with certified exact or
approximate fused top-k.

>>> import chrono_engine as ce
>>> ce.Exponential(half_life=30).evaluate(30).item()
0.5
"""
from __future__ import annotations

from . import errors
from ._core import build_info as _build_info
from .decay import (Decay, DecayPolicy, Exponential, Gaussian, HalfLife, Linear, NoDecay,
                    PowerLaw, Weibull, parse_decay)
from .article import article_reference_pipeline
from .engine import Engine, QueryResult, SearchOptions
from .fit import OUFit, fit_beta_bernoulli, fit_ou
from .scoring import ScoringPolicy, score
from .timelang import TemporalIntent, TimeExpression, parse_temporal_intent, parse_time

__version__ = "0.1.0"

__all__ = ["Engine", "QueryResult", "SearchOptions", "article_reference_pipeline", "Decay", "DecayPolicy", "Exponential", "Gaussian", "HalfLife", "Linear",
           "NoDecay", "PowerLaw", "Weibull", "parse_decay", "ScoringPolicy", "score",
           "parse_time", "parse_temporal_intent", "TimeExpression", "TemporalIntent",
           "verify_chains", "verify_hits", "ValidityMonitor", "ChainBatch", "stl",
           "fit_ou", "fit_beta_bernoulli", "OUFit",
           "TemporalEncoder", "TextEncoder", "TemporalEmbedder", "truncate",
           "build_info", "errors", "__version__"]

# Layer 3 (verify) compiles Numba kernels: imported on first use, not with the package.
# Layer 1 (embed) loads onnxruntime: also imported on first use.
_LAZY = {"verify_chains", "verify_hits", "ValidityMonitor", "ChainBatch", "stl"}
_LAZY_EMBED = {"TemporalEncoder", "TextEncoder", "TemporalEmbedder", "truncate"}


def __getattr__(name: str):
    if name in _LAZY or name in _LAZY_EMBED:
        import importlib
        module = importlib.import_module(".verify" if name in _LAZY else ".embed", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chrono_engine' has no attribute {name!r}")


def build_info() -> dict:
    """What this build compiled and chose: compiler, flags, SIMD level, hnswlib version.

    >>> import chrono_engine as ce
    >>> ce.build_info()["hnswlib_version"]
    '0.8.0'
    """
    return dict(_build_info())
