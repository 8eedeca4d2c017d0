"""How answers are judged: recall@k against the oracle, top-k agreement up to ties, the
engine's result table read back as answers, and the sanity checks on a finished report."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .corpus import Answers

__all__ = ["RECALL_TARGET", "SCORE_TOL", "agreement", "answers_from_table", "check_report", "recall_at_k",
           "same_topk"]

#: a peer counts in the ratio only when it reaches this recall@k
RECALL_TARGET = 0.95
#: two scores closer than this are a tie for the top-k comparisons (float32 similarity)
SCORE_TOL = 1e-5


def recall_at_k(got: Answers | Sequence, ref: Answers | Sequence) -> float:
    """Mean recall@k: retrieved ids that are in the exact top-k, over all queries
    (total hits / total exact answers; the same as tests/reference.py ``recall``)."""
    g = got.ids if isinstance(got, Answers) else got
    r = ref.ids if isinstance(ref, Answers) else [x[0] for x in ref]
    hits = total = 0
    for gi, ri in zip(g, r):
        hits += len(np.intersect1d(np.asarray(gi, np.uint64), np.asarray(ri, np.uint64)))
        total += len(ri)
    return hits / max(total, 1)


def same_topk(g_ids, g_scores, r_ids, r_scores, tol: float = SCORE_TOL) -> bool:
    """The same top-k up to rounding: scores agree within ``tol`` rank by rank, and any
    id that differs sits at the k-th score (a tie)."""
    if len(g_ids) != len(r_ids):
        return False
    if len(r_ids) == 0:
        return True
    if not np.allclose(np.asarray(g_scores, np.float64), np.asarray(r_scores, np.float64), rtol=0, atol=tol):
        return False
    diff = set(np.asarray(g_ids).tolist()) ^ set(np.asarray(r_ids).tolist())
    if not diff:
        return True
    kth = float(r_scores[-1])
    gmap = dict(zip(np.asarray(g_ids).tolist(), np.asarray(g_scores, np.float64).tolist()))
    rmap = dict(zip(np.asarray(r_ids).tolist(), np.asarray(r_scores, np.float64).tolist()))
    return all(abs({**rmap, **gmap}[i] - kth) < tol for i in diff)


def answers_from_table(table, nq: int, rows: np.ndarray | None = None) -> tuple[Answers, np.ndarray]:
    """Answers and the per-query ``certified`` flags from a search_batch result table;
    ``rows``: the workload's id of each engine id (None: the same ids)."""
    qcol = table.column("query").to_numpy()
    ids = table.column("id").to_numpy()
    if rows is not None:
        ids = rows[ids]
    sc = table.column("score").to_numpy()
    cert_rows = table.column("certified").to_numpy(zero_copy_only=False)
    bounds = np.searchsorted(qcol, np.arange(nq + 1))
    cert = np.ones(nq, bool)
    out_i, out_s = [], []
    for r in range(nq):
        a, b = bounds[r], bounds[r + 1]
        out_i.append(ids[a:b].astype(np.uint64))
        out_s.append(sc[a:b].astype(np.float64))
        if b > a:
            cert[r] = bool(cert_rows[a:b].all())
    return Answers(out_i, out_s), cert


def agreement(got: Answers, ref: Answers) -> float:
    """Fraction of queries whose top-k equals the oracle's (up to ties, :func:`same_topk`)."""
    ok = [same_topk(g, gs, r, rs) for g, gs, r, rs in zip(got.ids, got.scores, ref.ids, ref.scores)]
    return float(np.mean(ok)) if ok else 1.0


def check_report(report: dict) -> None:
    """Sanity checks on the measured results (the harness checks itself too)."""
    for row in report["results"]:
        for name, v in [("engine", row["engine"])] + list(row["peers"].items()):
            if not (0.0 <= v["recall"] <= 1.0) or not np.isfinite(v["qps"]) or v["qps"] <= 0:
                raise AssertionError(f"insane figure for {name}: {v}")
        for exact_peer in ("numba", "numpy_prefilter"):
            if exact_peer in row["peers"] and row["peers"][exact_peer]["recall"] < 0.99:
                raise AssertionError(f"the exact {exact_peer} peer disagrees with the NumPy oracle: "
                                     f"{row['peers'][exact_peer]}")

