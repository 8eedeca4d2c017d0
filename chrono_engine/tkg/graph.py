"""Rule graph and decay-weighted seeded personalised PageRank for RAG evidence (paper III-C).

Nodes are entities; every fact (s, r, o, t) (inverses included) is an edge s -> o. For a
question with head relation h asked at T, the edge's weight is

    w = q_e · c(tr_j) · exp(−β_j (T − t)),  t < T,

where tr_j is the length-1 rule h <- r (the strongest one when several apply) learned by
:func:`chrono_engine.tkg.rules.learn_rules`. Rules whose decay model does not describe their
time gaps better than the base rate by more than its cost (MDL: the likelihood gain must
exceed ½ log n per parameter; "erratic time gaps") contribute no edges. Edges with w < τ
are pruned while the PageRank is pushed (C++ core, ``chrono/ppr.hpp``). :meth:`RuleGraph.retrieve`
returns the facts carrying the most PageRank flow p(u) · w / W(u), with provenance: a
compact, time-aware evidence set for a RAG context.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from .. import _core
from ..errors import ConfigError, QueryError
from .rules import History, RuleSet

__all__ = ["RuleGraph", "mdl_keep"]


def mdl_keep(rules: RuleSet, hits: np.ndarray, tot: np.ndarray) -> np.ndarray:
    """Rules whose c e^{-βΔ} model beats the global base rate by more than ½ log n nats per
    parameter (2 parameters; n = the rule's observations): the others have erratic gaps."""
    d = np.arange(hits.shape[1])
    n = tot.sum(axis=1).astype(np.float64)
    base = hits.sum() / max(tot.sum(), 1)
    base = min(max(base, 1e-12), 1 - 1e-12)
    p = np.clip(rules.conf[:, None] * np.exp(-rules.beta[:, None] * d[None, :]), 1e-12, 1 - 1e-12)
    ll = (hits * np.log(p) + (tot - hits) * np.log1p(-p)).sum(axis=1)
    ll0 = hits.sum(axis=1) * math.log(base) + (tot - hits).sum(axis=1) * math.log1p(-base)
    return (ll - ll0) > np.log(np.maximum(n, 1.0))  # 2 parameters x ½ log n


class RuleGraph:
    """Entities and time-stamped facts, weighted per query by learned rules.

    Parameters
    ----------
    hist : the :class:`~chrono_engine.tkg.rules.History` (CSR of all facts with inverses).
    rules : learned rules; only length-1 rules give edge weights.
    keep : optional boolean mask of rules to use (e.g. :func:`mdl_keep`).
    quality : optional per-edge reliability q_e in (0, 1] (CSR order; default 1).

    An unusable ``quality`` raises :class:`~chrono_engine.errors.ConfigError`; a query that
    :meth:`retrieve` or :meth:`pagerank` cannot answer (head relation out of range, no seeds,
    a seed that is not a node, alpha outside (0, 1)) raises
    :class:`~chrono_engine.errors.QueryError`.
    """

    def __init__(self, hist: History, rules: RuleSet, keep: np.ndarray | None = None,
                 quality: np.ndarray | None = None) -> None:
        self.hist = hist
        n_rel = hist.n_relations
        self._conf = np.zeros((n_rel, n_rel))
        self._beta = np.zeros((n_rel, n_rel))
        one = np.flatnonzero((rules.length == 1) & (keep if keep is not None else True))
        for j in one.tolist():  # strongest rule per (head, body relation)
            h, r = int(rules.body[j, 0]), int(rules.body[j, 1])
            if rules.conf[j] > self._conf[h, r]:
                self._conf[h, r], self._beta[h, r] = rules.conf[j], rules.beta[j]
        if quality is not None:
            quality = np.ascontiguousarray(quality, np.float32)
            if quality.shape != hist.rel.shape:
                raise ConfigError(f"quality must hold one value in (0, 1] per edge: {len(hist.rel)} edges, "
                                  f"got shape {quality.shape}")
            bad = np.flatnonzero(~((quality > 0) & (quality <= 1)))
            if len(bad):
                raise ConfigError(f"quality must hold one value in (0, 1] per edge: quality[{bad[0]}] "
                                  f"is {quality[bad[0]]}")
        self._quality = quality

    def retrieve(self, seeds, T: int, head: int, *, tau: float = 1e-3, k: int = 50, alpha: float = 0.15,
                 eps: float = 1e-6) -> pa.Table:
        """The ``k`` facts with the most PageRank flow from ``seeds`` (entity ids, equal mass)
        for head relation ``head`` at time ``T``: columns subject, relation, object, t,
        flow, weight (w of the fact), decay (its e^{-β(T-t)}) and rule_confidence."""
        h = self.hist
        seeds = self._seeds(seeds, head)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise QueryError(f"k must be a positive integer, got {k!r}")
        conf, beta = self._conf[int(head)], self._beta[int(head)]
        out = self._ppr(seeds, T, head, alpha, eps, tau, int(k))
        e = out["edge"]
        src = np.searchsorted(h.ptr, e, side="right") - 1
        r = h.rel[e]
        return pa.table({"subject": pa.array(src.astype(np.int32)), "relation": pa.array(r),
                         "object": pa.array(h.obj[e]), "t": pa.array(h.t[e]),
                         "flow": pa.array(out["flow"]), "weight": pa.array(out["weight"]),
                         "decay": pa.array(np.exp(-beta[r] * (int(T) - h.t[e]))),
                         "rule_confidence": pa.array(conf[r])})

    def pagerank(self, seeds, T: int, head: int, *, tau: float = 1e-3, alpha: float = 0.15,
                 eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray, dict]:
        """(nodes, mass, stats) of the pushed PPR (mass sums to 1)."""
        out = self._ppr(self._seeds(seeds, head), T, head, alpha, eps, tau, 0)
        return out["node"], out["mass"], {"pushes": out["pushes"], "edges_scanned": out["edges_scanned"]}

    def _seeds(self, seeds, head: int) -> np.ndarray:
        """The seeds as int32 after checking ``head`` and that there is a seed."""
        if not 0 <= int(head) < self.hist.n_relations:
            raise QueryError(f"head relation {head} is not in 0..{self.hist.n_relations - 1}")
        seeds = np.atleast_1d(np.asarray(seeds, np.int32))
        if not len(seeds):
            raise QueryError("seeds must not be empty")
        return seeds

    def _ppr(self, seeds: np.ndarray, T: int, head: int, alpha: float, eps: float, tau: float,
             k: int) -> dict:
        """The core's pushed PPR; the arguments it rejects (a seed that is not a node, alpha
        outside (0, 1), ...) come back as QueryError instead of the core's bare ValueError."""
        h = self.hist
        try:
            return _core.ppr(h.ptr, h.rel, h.obj, h.t, self._quality, self._conf[int(head)],
                             self._beta[int(head)], seeds, np.ones(len(seeds)), int(T), alpha, eps, tau, k)
        except ValueError as e:
            raise QueryError(str(e)) from None
