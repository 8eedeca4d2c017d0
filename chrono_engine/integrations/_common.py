"""What the framework adapters share: an engine's hits as (text, metadata) records, one
search with the question's time intent or the caller's, and the rescoring of another
retriever's candidates by validity (:func:`chrono_engine.score`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .._args import shown
from .._time import MIN_TIME_US, now_us
from ..errors import QueryError
from ..metadata import RESERVED
from ..scoring import ScoringPolicy, score
from ..search import MODES, embed_question, instant

#: the hit columns copied into each document's metadata (``content`` is its text)
META_COLUMNS = ("id", "rank", "score", "similarity", "validity", "stem_id", "version", "valid_from",
                "valid_to", "title", "citation", "certified")
#: what a rescored document without a time becomes (see :func:`rescore`)
UNDATED = ("keep", "drop", "error")


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def metadata_columns(hits: pa.Table) -> list[str]:
    """The hit table's user metadata columns (tenant, acl, ...: every column that is not an
    engine or result column), in the table's order."""
    return [c for c in hits.column_names if c not in RESERVED]


def records(hits: pa.Table) -> list[tuple[str, dict]]:
    """(text, metadata) per hit, in rank order: the text is ``content`` (its ``title`` when
    it has none); metadata holds :data:`META_COLUMNS` and then the item's metadata columns
    (:func:`metadata_columns`: a null is None, a list<string> a list), with times as
    ISO-8601 strings in UTC (``valid_to`` None: open-ended), so that documents serialise as
    JSON."""
    n = hits.num_rows
    cols = {c: hits.column(c).to_pylist() for c in META_COLUMNS if c in hits.column_names}
    for c in ("valid_from", "valid_to"):
        if c in cols:
            cols[c] = [_iso(v) for v in cols[c]]
    for c in metadata_columns(hits):
        col = hits.column(c)
        vals = col.to_pylist()
        cols[c] = [_iso(v) for v in vals] if pa.types.is_timestamp(col.type) else vals
    texts = hits.column("content").to_pylist() if "content" in hits.column_names else [None] * n
    metas = [{c: v[i] for c, v in cols.items()} for i in range(n)]
    return [(t if t is not None else m.get("title") or "", m) for t, m in zip(texts, metas)]


def run_search(engine: Any, text: str, k: int, *, mode: str | None = None, as_of: Any = None,
               window: Any = None, now: Any = None, tz: Any = None, embed: Any = None,
               options: Mapping[str, Any] | None = None) -> pa.Table:
    """One question against ``engine``: with ``mode`` None (and no ``as_of`` / ``window``)
    :meth:`Engine.query <chrono_engine.Engine.query>` reads the time intent from the text;
    otherwise the caller's mode (``as_of`` alone implies "as_of", ``window`` alone "window")
    runs :meth:`Engine.search <chrono_engine.Engine.search>` on the whole question's
    embedding at T = ``as_of`` (or ``now``). ``options``: the other search keywords."""
    if not isinstance(text, str):
        raise QueryError(f"query must be a string, got {type(text).__name__}")
    opts = dict(options or {})
    if mode is None and as_of is None and window is None:
        return engine.query(text, k, now=now, tz=tz, embed=embed, **opts).hits
    if mode is None:
        mode = "window" if window is not None else "as_of"
    if mode not in MODES:
        raise QueryError(f"mode must be one of {', '.join(MODES)} (or None: the question's own), got {shown(mode)}")
    at = instant(as_of, "as_of") if as_of is not None else now_us() if now is None else instant(now, "now")
    vec = embed_question(embed if embed is not None else engine.embedder, text, at, engine.dim)
    when = {"window": window} if mode == "window" else {}
    if mode != "window" or as_of is not None:  # T = as_of, else now; a window keeps its own (its end)
        when["as_of"] = at
    return engine.search(vec, k, mode=mode, **when, **opts)


@dataclass(frozen=True)
class MetadataKeys:
    """Where a candidate's metadata holds each column :func:`chrono_engine.score` reads.

    ``observed_at`` (default "observed_at"; when absent, ``valid_from`` is used, as
    ``ce.score`` does): the time its decay counts from. ``valid_from`` / ``valid_to``
    (a missing end: open), ``fact_type`` (missing: "general"), ``reliability`` (missing:
    1.0) and ``deprecated`` (missing: False) are optional. Values are read by the engine's
    one rule for times (datetimes, dates, ISO-8601 strings, datetime64, int µs; naive = UTC).
    """

    observed_at: str = "observed_at"
    valid_from: str = "valid_from"
    valid_to: str = "valid_to"
    fact_type: str = "fact_type"
    reliability: str = "reliability"
    deprecated: str = "deprecated"


def rescore(similarity: Sequence[float], metadata: Sequence[Mapping[str, Any]], *,
            policy: ScoringPolicy | None, as_of: Any, keys: MetadataKeys, undated: str) -> tuple[np.ndarray, pa.Table]:
    """Score candidates (their similarity and metadata) with :func:`chrono_engine.score`.

    Returns (order, table): ``order`` the candidates' positions best first (score, then
    similarity, then input order), ``table`` the scored rows in input order (``validity``,
    ``score``, and ``undated``). A candidate with neither ``observed_at`` nor
    ``valid_from`` is *undated*: ``undated="keep"`` scores it as the engine stores undated
    facts (valid from the beginning of time, so its decay has run its course: it ranks
    after the dated ones, by similarity), "drop" leaves it out of ``order``, "error" raises
    a QueryError naming it."""
    if undated not in UNDATED:
        raise QueryError(f"undated must be one of {', '.join(UNDATED)}, got {shown(undated)}")
    n = len(metadata)
    if len(similarity) != n:
        raise QueryError(f"{len(similarity)} similarities for {n} candidates")
    sim = np.asarray(similarity, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(sim)):
        i = int(np.flatnonzero(~np.isfinite(sim))[0])
        raise QueryError(f"candidate {i}: similarity {shown(float(sim[i]))} is not a finite number")
    for i, m in enumerate(metadata):
        if not isinstance(m, Mapping):
            raise QueryError(f"candidate {i}: metadata must be a mapping, got {type(m).__name__}")
    obs: list[Any] = []
    is_undated = np.zeros(n, bool)
    for i, m in enumerate(metadata):
        v = m.get(keys.observed_at)
        if v is None:
            v = m.get(keys.valid_from)
        if v is None:
            if undated == "error":
                raise QueryError(f"candidate {i} has no '{keys.observed_at}' (or '{keys.valid_from}') in its "
                                 "metadata (undated='keep' or 'drop' to allow it)")
            is_undated[i] = True
            v = MIN_TIME_US
        obs.append(v)
    cols: dict[str, Any] = {"similarity": pa.array(sim, pa.float64()), "observed_at": _times_column(obs, "observed_at")}
    if any(keys.valid_from in m or keys.valid_to in m for m in metadata):
        vf = [m.get(keys.valid_from) for m in metadata]
        cols["valid_from"] = _times_column([MIN_TIME_US if v is None else v for v in vf], "valid_from")
        cols["valid_to"] = _times_column([m.get(keys.valid_to) for m in metadata], "valid_to")
    for key, name, typ in ((keys.fact_type, "fact_type", pa.string()), (keys.reliability, "reliability", pa.float64()),
                           (keys.deprecated, "deprecated", pa.bool_())):
        if any(key in m for m in metadata):
            vals = [m.get(key) for m in metadata]
            try:
                cols[name] = pa.array(vals, typ)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                i = next(j for j, v in enumerate(vals) if not _fits(v, typ))
                raise QueryError(f"candidate {i}: metadata '{key}' = {shown(vals[i])} is not "
                                 f"{'a string' if name == 'fact_type' else 'a number' if name == 'reliability' else 'a boolean'}") from None
    table = score(pa.table(cols), as_of=now_us() if as_of is None else as_of, policy=policy)
    table = table.append_column("undated", pa.array(is_undated))
    sc = table.column("score").to_numpy(zero_copy_only=False).astype(np.float64)
    keep = np.flatnonzero(~is_undated) if undated == "drop" else np.arange(n)
    order = keep[np.lexsort((keep, -sim[keep], -sc[keep]))]
    return order, table


def _fits(value: Any, typ: pa.DataType) -> bool:
    try:
        pa.array([value], typ)
        return True
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return False


def _times_column(values: list, name: str) -> pa.Array:
    """Times of mixed kinds (as metadata holds them) -> a timestamp column, each value read
    by the engine's one rule; a bad one is a QueryError naming the column and candidate."""
    out = np.zeros(len(values), np.int64)
    valid = np.array([v is not None for v in values], bool)
    for i in np.flatnonzero(valid):
        out[i] = instant(values[i], f"candidate {i}: metadata '{name}'")
    return pa.array(out, pa.timestamp("us", tz="UTC"), mask=~valid)

