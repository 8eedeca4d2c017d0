"""A temporal retrieval set built from a temporal KG, and the layer ablation on it.

Like the paper's experiment 6: facts ``(s, r, o, day)`` of ICEWS14 are rendered as dated
sentences ("On March 05, 2014, Barack Obama make statement China."); a question asks for
``(s, r, ?)`` *as of* a day T ("As of June 02, 2014: Barack Obama make statement whom?");
its gold answers are the facts of that (s, r) on the latest day ≤ T — the version valid
then. Every earlier and later fact of the same (s, r) is a near-duplicate distractor that
only time can separate; facts of other pairs are the rest of the corpus.

:func:`run_ablation` reports gold@k for

- ``semantic``: cosine of sentence vectors only (the date is just words in the text);
- ``layer1``: the composed embedding [λ·e_temp(t_fact) ; e_sem], question embedded at T;
- ``decay``: semantic vectors in an :class:`~chrono_engine.Engine`, searched *as of* T
  (facts from after T are not yet known) with exponential decay of age;
- ``both``: composed vectors with the same as-of decay search.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import EmbeddingError

__all__ = ["RetrievalSet", "build_retrieval_set", "run_ablation"]

US_DAY = 86_400_000_000


@dataclass
class RetrievalSet:
    sentences: list          # one per fact
    fact_us: np.ndarray      # int64 µs, the fact's day
    fact_pair: np.ndarray    # int32 index of its (s, r) pair
    questions: list          # question texts
    question_us: np.ndarray  # int64 µs, the day T asked at
    question_pair: np.ndarray
    gold: list               # per question: int array of gold fact indices

    def __len__(self) -> int:
        return len(self.questions)


def _phrase(name: str) -> str:
    return name.replace("_", " ").strip()


def build_retrieval_set(tkg: Any, *, max_facts: int = 8000, n_questions: int = 1000,
                        min_days: int = 3, seed: int = 0) -> RetrievalSet:
    """Dated sentences and as-of questions from a names-format TKG (all three splits)."""
    if getattr(tkg, "day0", None) is None:
        raise EmbeddingError("build_retrieval_set needs a names-format dataset (dates, not file times)")
    cols = {k: np.concatenate([tkg.split(s).column(k).to_numpy() for s in ("train", "valid", "test")])
            for k in ("subject", "relation", "object", "t")}
    facts = np.unique(np.stack([cols["subject"], cols["relation"], cols["object"], cols["t"]], axis=1), axis=0)
    pair_key = facts[:, 0].astype(np.int64) * (tkg.n_relations + 1) + facts[:, 1]
    order = np.lexsort((facts[:, 3], pair_key))
    facts, pair_key = facts[order], pair_key[order]
    starts = np.r_[0, np.flatnonzero(np.diff(pair_key)) + 1]
    ends = np.r_[starts[1:], len(facts)]
    ndays = np.array([len(np.unique(facts[a:b, 3])) for a, b in zip(starts, ends)])
    eligible = np.flatnonzero(ndays >= min_days)
    if not len(eligible):
        raise EmbeddingError(f"no (subject, relation) pair has facts on {min_days} or more days")
    rng = np.random.default_rng(seed)
    rng.shuffle(eligible)
    chosen, total = [], 0
    for p in eligible:
        if total >= max_facts:
            break
        chosen.append(p)
        total += ends[p] - starts[p]
    day0 = _dt.datetime(tkg.day0.year, tkg.day0.month, tkg.day0.day, tzinfo=_dt.timezone.utc)
    epoch0 = int((day0 - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)).total_seconds()) * 1_000_000
    last_day = int(cols["t"].max())
    sentences, fact_us, fact_pair, spans = [], [], [], []
    for j, p in enumerate(chosen):
        a, b = starts[p], ends[p]
        spans.append((len(sentences), len(sentences) + (b - a)))
        for s, r, o, t in facts[a:b]:
            d = day0 + _dt.timedelta(days=int(t))
            sentences.append(f"On {d:%B %d, %Y}, {_phrase(tkg.entities[s])} {_phrase(tkg.relations[r]).lower()} "
                             f"{_phrase(tkg.entities[o])}.")
            fact_us.append(epoch0 + int(t) * US_DAY)
            fact_pair.append(j)
    fact_us = np.array(fact_us, np.int64)
    fact_pair = np.array(fact_pair, np.int32)
    questions, q_us, q_pair, gold = [], [], [], []
    for _ in range(n_questions):
        j = int(rng.integers(len(chosen)))
        a, b = spans[j]
        days = np.unique((fact_us[a:b] - epoch0) // US_DAY)
        T = int(rng.integers(days[1], last_day + 1))  # at least one older version before T
        latest = days[days <= T].max()
        g = a + np.flatnonzero((fact_us[a:b] - epoch0) // US_DAY == latest)
        s, r = facts[starts[chosen[j]], 0], facts[starts[chosen[j]], 1]
        d = day0 + _dt.timedelta(days=T)
        questions.append(f"As of {d:%B %d, %Y}: {_phrase(tkg.entities[s])} {_phrase(tkg.relations[r]).lower()} whom?")
        q_us.append(epoch0 + T * US_DAY)
        q_pair.append(j)
        gold.append(g)
    return RetrievalSet(sentences, fact_us, fact_pair, questions, np.array(q_us, np.int64),
                        np.array(q_pair, np.int32), gold)


def _gold_at(top: np.ndarray, gold: list) -> float:
    return float(np.mean([np.isin(g, row).any() for row, g in zip(top, gold)]))


def _exact_top(q: np.ndarray, x: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(q), k), np.int64)
    for a in range(0, len(q), 256):
        s = q[a:a + 256] @ x.T
        part = np.argpartition(-s, k - 1, axis=1)[:, :k]
        ordered = np.take_along_axis(s, part, 1).argsort(axis=1)[:, ::-1]
        out[a:a + 256] = np.take_along_axis(part, ordered, 1)
    return out


def _engine_top(x: np.ndarray, fact_us: np.ndarray, q: np.ndarray, q_us: np.ndarray, k: int,
                half_life_days: float) -> np.ndarray:
    from ..decay import Exponential
    from ..engine import Engine
    eng = Engine(x.shape[1], decay=Exponential(half_life=half_life_days), threads=1)
    ids = eng.ingest({"vector": x, "valid_from": fact_us, "ingested_at": np.full(len(x), fact_us.min())})
    row_of = np.empty(len(x), np.int64)
    row_of[ids.astype(np.int64)] = np.arange(len(x))  # the ids number the rows as stored (by valid_from)
    hits = eng.search_batch(q, k=k, mode="as_of", as_of=q_us, exact=True, arbitrate=False)
    qi = hits.column("query").to_numpy()
    ids = row_of[hits.column("id").to_numpy().astype(np.int64)]
    top = np.full((len(q), k), -1, np.int64)
    rank = hits.column("rank").to_numpy() - 1
    top[qi, rank] = ids
    return top


def run_ablation(rs: RetrievalSet, semantic: Callable[[list], np.ndarray], *, temporal: Any = None,
                 weight: float = 1.0, half_life_days: float = 30.0, k: int = 5,
                 sem_facts: np.ndarray | None = None, sem_questions: np.ndarray | None = None) -> dict:
    """gold@k of the four variants (see the module docstring). ``semantic`` embeds a list of
    texts; precomputed ``sem_facts`` / ``sem_questions`` skip it."""
    from .compose import compose_blocks
    from .temporal import TemporalEncoder

    def unit(a):
        a = np.asarray(a, np.float32)
        return a / np.linalg.norm(a, axis=1, keepdims=True)

    sf = unit(sem_facts if sem_facts is not None else semantic(rs.sentences))
    sq = unit(sem_questions if sem_questions is not None else semantic(rs.questions))
    temporal = temporal if temporal is not None else TemporalEncoder(dim=32, min_period="1d", max_period="4y")
    cf = compose_blocks(temporal.encode(rs.fact_us), sf, weight)
    cq = compose_blocks(temporal.encode(rs.question_us), sq, weight)
    return {
        "semantic": _gold_at(_exact_top(sq, sf, k), rs.gold),
        "layer1": _gold_at(_exact_top(cq, cf, k), rs.gold),
        "decay": _gold_at(_engine_top(sf, rs.fact_us, sq, rs.question_us, k, half_life_days), rs.gold),
        "both": _gold_at(_engine_top(cf, rs.fact_us, cq, rs.question_us, k, half_life_days), rs.gold),
    }
