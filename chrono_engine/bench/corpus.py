"""What the harness searches and what comes back: the corpus as columns, a batch of
queries, the answers, and the synthetic regimes with their decay policies.

Every contender (the engine and each peer) reads the same :class:`Workload` and answers the
same :class:`Queries` with :class:`Answers`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._time import OPEN_END

__all__ = ["KNOWN_ALL", "REGIMES", "Answers", "Queries", "Workload", "policy_for", "validity_spans",
           "workload_from_corpus", "workload_from_engine"]

#: a transaction time after everything: the bitemporal filter passes every item
KNOWN_ALL = np.iinfo(np.int64).max - 1
#: regime name -> (the half-lives' name in :mod:`chrono_engine.synthetic`, the regime's fusion)
REGIMES = {"steep": ("STEEP_HALF_LIVES", "product"), "gentle": ("GENTLE_HALF_LIVES", "linear")}


@dataclass
class Workload:
    """Vectors and metadata columns as the search definition reads them.

    ``cols``: valid_from, valid_to, observed_at, ingested_at, retracted_at (int64 µs;
    open ends int64 max), reliability (float), fact_type (int codes into ``specs``), stem
    (int, -1 = no stem), version (orderable int), deprecated (bool), id (uint64).
    ``specs``: decay kernel rows [code, p0, p1, scale, symmetric] per fact-type code
    (:meth:`chrono_engine.DecayPolicy.kernel_table`, read as
    :func:`chrono_engine.decay.evaluate_spec` does).
    """

    vectors: np.ndarray
    cols: dict
    specs: np.ndarray

    def __len__(self) -> int:
        return len(self.cols["valid_from"])


@dataclass
class Queries:
    """One batch of queries: vectors, T and known_at per query, and the scoring knobs."""

    vectors: np.ndarray
    t: np.ndarray
    known_at: np.ndarray
    mode: str = "as_of"            # "as_of" | "latest"
    fusion: str = "product"        # "product" | "linear"
    alpha: float = 0.75
    tau: float = 0.0
    penalty: float = 0.1           # latest: items no longer in force are multiplied by this
    k: int = 10
    future: str = "exclude"        # latest: items not yet valid ("exclude" | "penalize" | "include")

    def __len__(self) -> int:
        return len(self.vectors)

    def subset(self, n: int) -> Queries:
        """The first ``n`` queries, same knobs."""
        return Queries(self.vectors[:n], self.t[:n], self.known_at[:n], self.mode, self.fusion,
                       self.alpha, self.tau, self.penalty, self.k, self.future)

    @property
    def future_penalty(self) -> float:
        """The multiplier of items not yet valid in latest mode (0: excluded)."""
        return {"exclude": 0.0, "penalize": self.penalty, "include": 1.0}[self.future]


@dataclass
class Answers:
    """Top-k per query: ``ids`` (list of uint64 arrays) and ``scores`` (float64 arrays)."""

    ids: list
    scores: list

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, n: int) -> Answers:
        """The answers to the first ``n`` queries."""
        return Answers(self.ids[:n], self.scores[:n])


def policy_for(half_lives: Sequence[float]):
    """The benchmark's decay policy: fact type ``typeNN`` decays exponentially with the
    NN-th half-life (days); no default, so an unknown type is an error."""
    import chrono_engine as ce
    return ce.DecayPolicy({f"type{i:02d}": ce.Exponential(half_life=float(h))
                           for i, h in enumerate(half_lives)}, default=None)


def workload_from_corpus(corpus, policy) -> Workload:
    """A :class:`Workload` straight from a synthetic corpus (ids = ingest order)."""
    n = len(corpus)
    cols = {
        "valid_from": corpus.valid_from.astype(np.int64),
        "valid_to": corpus.valid_to.astype(np.int64),
        "observed_at": corpus.observed_at.astype(np.int64),
        "ingested_at": corpus.ingested_at.astype(np.int64),
        "retracted_at": np.full(n, OPEN_END, np.int64),
        "reliability": corpus.reliability.astype(np.float32),
        "fact_type": corpus.fact_type.astype(np.int64),
        "stem": corpus.stem_id.astype(np.int64),
        "version": corpus.version.astype(np.uint64),
        "deprecated": corpus.deprecated.astype(bool),
        "id": np.arange(n, dtype=np.uint64),
    }
    return Workload(np.ascontiguousarray(corpus.vector, np.float32), cols,
                    policy.kernel_table(list(corpus.fact_types)))


def workload_from_engine(eng) -> Workload:
    """A :class:`Workload` read back from an engine (what the engine stored)."""
    c = eng.columns()
    cols = {"valid_from": c["valid_from"], "valid_to": c["valid_to"], "observed_at": c["observed_at"],
            "ingested_at": c["ingested_at"], "retracted_at": c["retracted_at"],
            "reliability": c["reliability"], "fact_type": c["fact_type"].astype(np.int64),
            "stem": c["stem"].astype(np.int64), "version": c["version"],
            "deprecated": c["deprecated"].astype(bool), "id": c["id"]}
    vecs = eng.vectors()
    names = list(eng.fact_types) or ["general"]
    return Workload(np.ascontiguousarray(vecs, np.float32), cols, eng.decay.kernel_table(names))


@dataclass
class ValiditySpans:
    """What :func:`chrono_engine.synthetic.times_for_selectivity` reads of a corpus: the
    validity columns and the span the corpus was generated over (µs)."""

    valid_from: np.ndarray
    valid_to: np.ndarray
    start: int
    end: int


def validity_spans(eng, start: str = "2015-01-01", end: str = "2026-01-01") -> ValiditySpans:
    """The validity columns of an engine's rows (a synthetic store reopened, its corpus no
    longer at hand), over ``make_corpus``'s default span, for query times at a share in force."""
    c = eng.columns()
    us = lambda d: int(np.datetime64(d, "us").astype(np.int64))  # noqa: E731
    return ValiditySpans(c["valid_from"], c["valid_to"], us(start), us(end))
