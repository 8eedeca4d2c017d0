"""NumPy reference of the engine's search definition (docs/scoring.md and docs/search.md,
"Modes"), written independently of the C++ planner. Tests compare the engine against it."""
from __future__ import annotations

import numpy as np

OPEN_END = np.iinfo(np.int64).max
US_PER_DAY = 86_400_000_000


def similarities(q: np.ndarray, vectors: np.ndarray, metric: str) -> np.ndarray:
    """(nq, n) similarities in float64."""
    q = np.asarray(q, np.float64)
    x = np.asarray(vectors, np.float64)
    if metric == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        return q @ x.T  # stored vectors are unit length
    if metric == "ip":
        return q @ x.T
    d2 = (q * q).sum(1)[:, None] + (x * x).sum(1)[None, :] - 2 * q @ x.T
    return 1.0 / (1.0 + np.sqrt(np.maximum(d2, 0)))


def winners(cols: dict, in_force: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Boolean mask: the row belongs to its stem's winning version, the maximum of
    (in force, version) over the stem's known rows; every chunk of that version wins.
    Rows without a stem always pass."""
    stem = cols["stem"]
    win = stem < 0
    rows = np.flatnonzero(known & (stem >= 0))
    if len(rows):
        key_force = in_force[rows].astype(np.int64)
        key_ver = cols["version"][rows]
        order = np.lexsort((key_ver, key_force, stem[rows]))
        r = rows[order]
        s = stem[r]
        last = np.r_[s[1:] != s[:-1], True]
        best_force = dict(zip(s[last].tolist(), key_force[order][last].tolist()))
        best_ver = dict(zip(s[last].tolist(), key_ver[order][last].tolist()))
        for row, st, f, v in zip(rows.tolist(), stem[rows].tolist(), key_force.tolist(), key_ver.tolist()):
            if best_force[st] == f and best_ver[st] == v:
                win[row] = True
    return win


def search(cols: dict, vectors: np.ndarray, decay_of, q: np.ndarray, k: int, *, mode: str, t, known_at,
           window=(0, 0), fusion="product", alpha=0.75, tau=0.0, deprecated="penalize", future="exclude",
           penalty=0.1, arbitrate=True, type_mask=None, metric="cosine", sims=None, row_mask=None):
    """Per query: (ids, scores) of the top-k, best first, ties by ascending id.

    ``cols``: valid_from, valid_to, observed_at, ingested_at, retracted_at (int64 µs),
    reliability, fact_type (int codes), stem (int, -1 none), version (uint64), deprecated,
    id; optionally deprecated_from (the valid time a row is deprecated from, instead of the
    flag). The columns are the store as known at every query's known_at (callers that model
    lifecycle events pass the view of that known_at). ``decay_of(age_days, fact_type_codes)
    -> D``. ``t``/``known_at``: per query arrays. ``row_mask``: the rows a ``where=``
    filter passes (:func:`where_mask`).
    """
    nq = len(q)
    S = similarities(q, vectors, metric) if sims is None else sims
    out = []
    for i in range(nq):
        T, K = int(t[i]), int(known_at[i])
        vf, vt = cols["valid_from"], cols["valid_to"]
        known = (cols["ingested_at"] <= K) & (K < cols["retracted_at"])
        valid = (vf <= T) & (T < vt)
        if mode == "latest":
            dep = (cols["deprecated_from"] <= T) if "deprecated_from" in cols else cols["deprecated"].astype(bool)
            in_force = valid & ~dep
        elif mode == "as_of":
            in_force = valid
        elif mode == "window":
            in_force = (vf < window[1][i]) & (vt > window[0][i])
        else:
            in_force = np.ones(len(vf), bool)
        if mode == "latest":
            policy = {"penalize": penalty, "exclude": 0.0, "include": 1.0}
            pen = np.where(in_force, 1.0, np.where(vf > T, policy[future], policy[deprecated]))
        else:
            pen = np.where(in_force, 1.0, 0.0)
        age = (float(T) - cols["observed_at"].astype(np.float64)) / US_PER_DAY
        V = cols["reliability"].astype(np.float64) * decay_of(age, cols["fact_type"])
        ok = known & (pen > 0) & (V >= tau)
        if type_mask is not None:
            ok &= type_mask[cols["fact_type"]]
        if row_mask is not None:  # a where= filter's rows (where_mask); arbitration sees every row
            ok &= row_mask
        if arbitrate:
            ok &= winners(cols, in_force, known)
        s = S[i]
        if fusion == "product":
            f = np.clip(s, 0, 1) * V
        else:
            f = alpha * s + (1 - alpha) * V
        f = f * pen
        idx = np.flatnonzero(ok)
        order = np.lexsort((cols["id"][idx], -f[idx]))[:k]
        out.append((cols["id"][idx[order]], f[idx[order]]))
    return out


def recall(got_ids, ref) -> float:
    """Mean recall@k of engine answers (list of id arrays) against reference answers."""
    hits = total = 0
    for g, (r, _) in zip(got_ids, ref):
        hits += len(set(g.tolist()) & set(r.tolist()))
        total += len(r)
    return hits / max(total, 1)


def where_mask(where, values: dict, n: int) -> np.ndarray:
    """Rows passing a ``where=`` filter (the dict form), evaluated row by row in plain
    Python over ``values`` (column name -> list of Python values, None = null; a list
    column's values are lists; timestamps are µs ints and the filter's times ISO strings).
    A null matches no $eq / $in / range; $ne, $nin and $not are negations; a list matches
    $eq / $in when any element does."""
    return np.array([_row_passes(where, values, i) for i in range(n)], dtype=bool)


def _time_of(v, x):
    """A filter's time string as µs where it is compared with a timestamp column's value (µs)."""
    if isinstance(x, str) and isinstance(v, int) and not isinstance(v, bool):
        return int(np.datetime64(x.replace("Z", ""), "us").astype(np.int64))
    return x


def _row_passes(f, values, i) -> bool:
    out = True
    for key, val in f.items():
        if key == "$and":
            ok = all(_row_passes(g, values, i) for g in val)
        elif key == "$or":
            ok = any(_row_passes(g, values, i) for g in val)
        elif key == "$not":
            ok = not _row_passes(val, values, i)
        else:
            ops = val if isinstance(val, dict) else {"$eq": val}
            v = values[key][i]
            ok = all(_cmp(v, op, x) for op, x in ops.items())
        out = out and ok
    return out


def _cmp(v, op, x) -> bool:
    if op == "$exists":
        return (v is not None) == x
    if op == "$ne":
        return not _cmp(v, "$eq", x)
    if op == "$nin":
        return not _cmp(v, "$in", x)
    if v is None:
        return False
    if op in ("$eq", "$in"):
        want = [x] if op == "$eq" else list(x)
        items = v if isinstance(v, list) else [v]
        return any(_same_kind(a, _time_of(a, b)) and a == _time_of(a, b) for a in items for b in want)
    x = _time_of(v, x)
    return {"$gt": v > x, "$gte": v >= x, "$lt": v < x, "$lte": v <= x}[op]


def _same_kind(a, b) -> bool:
    """Values that compare: two strings, two bools, two numbers (bools are not numbers)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str)
    return True
