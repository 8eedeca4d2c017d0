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

from typing import TYPE_CHECKING

from . import _cpu

_cpu.check()  # before the compiled core loads: an ImportError, not SIGILL, on a CPU below its baseline
_cpu.core_present()  # a source checkout without its compiled core: say how to run the installed package

from . import errors, timelang
from ._core import build_info as _build_info
from ._version import __version__
from .decay import (Decay, DecayPolicy, Exponential, Gaussian, HalfLife, Linear, NoDecay,
                    PowerLaw, Weibull, parse_decay)
from .article import article_reference_pipeline
from .engine import Engine, QueryResult, SearchOptions
from .grounding import ground_rows
from .fit import OUFit, fit_beta_bernoulli, fit_ou
from .scoring import ScoringPolicy, score
from .survival import FactTypeFit, ValidityFit, fit_validity, fit_validity_intervals
from .timelang import GroundedFact, TemporalIntent, TimeExpression, ground, parse_temporal_intent, parse_time

if TYPE_CHECKING:  # editors and type checkers see the lazy names; nothing runs at import
    from . import datasets, distributed, embed, tkg, verify
    from .embed import TemporalEmbedder, TemporalEncoder, TextEncoder, truncate
    from .verify import ChainBatch, ValidityMonitor, stl, verify_chains, verify_hits

__all__ = ["Engine", "QueryResult", "SearchOptions", "article_reference_pipeline",
           "Decay", "DecayPolicy", "Exponential", "Gaussian", "HalfLife", "Linear", "NoDecay",
           "PowerLaw", "Weibull", "parse_decay", "ScoringPolicy", "score",
           "parse_time", "parse_temporal_intent", "TimeExpression", "TemporalIntent", "ground", "GroundedFact", "ground_rows",
           "verify_chains", "verify_hits", "ValidityMonitor", "ChainBatch", "stl",
           "fit_ou", "fit_beta_bernoulli", "OUFit",
           "fit_validity", "fit_validity_intervals", "ValidityFit", "FactTypeFit",
           "TemporalEncoder", "TextEncoder", "TemporalEmbedder", "truncate",
           "build_info", "errors", "timelang", "verify", "embed", "tkg", "datasets", "distributed", "__version__"]

# Imported on first use, not with the package: layer 3 (verify) and layer 2 (tkg) compile
# Numba kernels; layer 1 (embed) builds ONNX graphs run by onnxruntime (the [embed] extra,
# itself imported only when an encoder is made). Name -> the subpackage that defines it
# (or that is it).
_LAZY = {**dict.fromkeys(["verify_chains", "verify_hits", "ValidityMonitor", "ChainBatch", "stl"], ".verify"),
         **dict.fromkeys(["TemporalEncoder", "TextEncoder", "TemporalEmbedder", "truncate"], ".embed"),
         "verify": ".verify", "embed": ".embed", "tkg": ".tkg", "datasets": ".datasets",
         "distributed": ".distributed"}


def __getattr__(name: str):
    """Import a lazy name's subpackage on first use and keep the name in the module."""
    if name in _LAZY:
        import importlib
        module = importlib.import_module(_LAZY[name], __name__)
        value = module if _LAZY[name] == "." + name else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chrono_engine' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the lazily imported ones, so ``dir(ce)`` and editors see them."""
    return sorted(set(globals()) | set(_LAZY))


def build_info() -> dict:
    """What this build compiled and chose: compiler, flags, SIMD level, hnswlib version.

    >>> import chrono_engine as ce
    >>> ce.build_info()["hnswlib_version"]
    '0.8.0'
    """
    return dict(_build_info())
