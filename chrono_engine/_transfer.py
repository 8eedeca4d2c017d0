"""Moving rows between engines with their whole history (internal; re-sharding).

:func:`export_rows` copies chosen rows of an engine into a :class:`Transfer`: plain Arrow
tables and a few scalars, picklable, so it can travel between processes (Ray actors).
:func:`import_rows` appends such a payload to another engine through its one logged write
(:meth:`StoreState.commit`): one log record, so a crash leaves all of it or none, and a
store's followers, a reopen and the next checkpoint see it as any ingest.

What travels is what a snapshot keeps (``storage/checkpoint.py``): every base column as
ingested, the vectors as stored (unit length under cosine: not normalised again on import,
so their bits are kept), the names behind the fact-type and stem codes, the string columns,
``retracted_at``, the user metadata columns with their kinds, and the rows' lifecycle events
(amendments), oldest first. Ids are kept; the rows keep their relative storage order and
follow the target's rows. Not kept: the target's codes (fact types and stems are renumbered
by name), the HNSW graph and the probe plan's partition (rebuilt as for any ingest).

A stem is one lineage and moves whole: an import naming a stem the target already holds is
refused, as are ids it holds, another ``dim`` or ``metric``, and a metadata column of
another kind. A payload is untrusted input: its layout is checked exactly and its rows pass
the ingest schema's rules and the events the core's, before the first write.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from . import metadata as _metadata
from ._state import AMEND_FIELDS, STRING_COLUMNS, strings_at
from ._time import MAX_TIME_US, MIN_TIME_US, OPEN_END, now_us
from .errors import ConfigError, QueryError, SchemaError
from .schema import COLUMNS, normalize_rows

__all__ = ["Transfer", "export_rows", "import_rows", "FORMAT"]

#: the payload's layout version
FORMAT = 1
_TIMES = ("valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at")
#: the amendments table: the payload row each event belongs to, then the core's fields
AMEND_SCHEMA = pa.schema([("row", pa.uint32()), ("tx", pa.int64()), ("valid_to", pa.int64()),
                          ("deprecated_from", pa.int64())])


@dataclass
class Transfer:
    """Rows of one engine with their history.

    ``rows``: one row per item in the source's storage order, in the ingest schema with
    every value explicit (:func:`rows_schema`): ``id`` (uint64), ``vector``
    (fixed_size_list<float32>[dim], as stored), the five times as int64 µs (``OPEN_END``
    for open ends), ``reliability`` (float32), ``deprecated`` (bool, as ingested),
    ``fact_type`` and ``stem_id`` (names), ``version``, ``supersedes``, ``content``,
    ``title``, ``source``, ``modality`` (strings), then the user metadata columns of
    ``metadata`` ({name: kind}, the source's order) as their kinds' Arrow types.
    ``amendments``: the rows' lifecycle events, oldest first (:data:`AMEND_SCHEMA`; ``row``
    indexes ``rows``)."""

    dim: int
    metric: str
    rows: pa.Table
    amendments: pa.Table
    metadata: dict = field(default_factory=dict)
    format: int = FORMAT

    def __len__(self) -> int:
        return self.rows.num_rows


def rows_schema(dim: int, metadata: dict) -> pa.Schema:
    """The exact schema of :attr:`Transfer.rows`."""
    return pa.schema(
        [("id", pa.uint64()), ("vector", pa.list_(pa.float32(), dim))]
        + [(name, pa.int64()) for name in _TIMES]
        + [("reliability", pa.float32()), ("deprecated", pa.bool_()), ("fact_type", pa.string()),
           ("stem_id", pa.string())]
        + [(name, pa.string()) for name in STRING_COLUMNS]
        + [(name, _metadata.ARROW_TYPES[kind]) for name, kind in metadata.items()])


def export_rows(eng: Any, ids: Any) -> Transfer:
    """The rows of ``ids`` (ids in ``eng``, in any order; NotFoundError for an unknown one,
    QueryError for one given twice) with their history, in ``eng``'s storage order."""
    st = eng._state
    with st.write:  # one consistent copy: rows, strings and events of one moment
        rows = np.sort(st.rows_of(ids).astype(np.int64))
        cols = st.columns_at(rows)  # as ingested
        twice = np.flatnonzero(rows[1:] == rows[:-1])
        if len(twice):
            raise QueryError(f"ids: id {int(cols['id'][twice[0]])} is given twice")
        strings = strings_at(st.strings(), rows)
        vectors = st.core.vectors(rows.astype(np.uint32))
        user = st.user_table(rows)
        kinds = st.user_kinds()
        a_rows, tx, vt, dep = st.amendments()
        fact_types = np.asarray(st.fact_types or [""], dtype=object)
        stems = st.stem_names(cols["stem"])
    at = np.flatnonzero(np.isin(a_rows.astype(np.int64), rows))  # in the core's order: oldest first per row
    amendments = pa.table([pa.array(np.searchsorted(rows, a_rows[at].astype(np.int64)).astype(np.uint32)),
                           pa.array(tx[at], pa.int64()), pa.array(vt[at], pa.int64()),
                           pa.array(dep[at], pa.int64())], schema=AMEND_SCHEMA)
    n = len(rows)
    arrays = [pa.array(cols["id"], pa.uint64()),
              pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), st.dim)]
    arrays += [pa.array(cols[name], pa.int64()) for name in _TIMES]
    arrays += [pa.array(cols["reliability"], pa.float32()), pa.array(cols["deprecated"].astype(bool)),
               pa.array(fact_types[cols["fact_type"]] if n else [], pa.string()), stems.cast(pa.string())]
    arrays += [strings.column(name).combine_chunks().cast(pa.string()) for name in STRING_COLUMNS]
    arrays += [user[name] for name in kinds]
    table = pa.Table.from_arrays(arrays, schema=rows_schema(st.dim, kinds))
    return Transfer(dim=st.dim, metric=st.metric, rows=table, amendments=amendments, metadata=dict(kinds))


def import_rows(eng: Any, payload: Any) -> np.ndarray:
    """Append a :class:`Transfer` to ``eng`` (in memory, or a writable store: one logged
    write) with ids, base columns, metadata, retractions and events as exported; returns
    the ids (uint64) in the payload's order. Nothing is written unless all of it is:
    ConfigError for another ``dim`` / ``metric``; SchemaError (rule ``payload``) for a
    malformed payload; QueryError naming an id or a stem the target already holds;
    SchemaError naming a metadata column of another kind, or a row or an event that breaks
    the store's rules; StorageError from an engine that does not write. An empty payload is
    a no-op."""
    st = eng._state
    t = _checked(payload, st)
    if not len(t):
        return np.zeros(0, np.uint64)
    with st.write:
        kinds = st.user_kinds()
        for name, kind in t.metadata.items():
            if kinds.get(name, kind) != kind:
                raise SchemaError(f"column {name!r}: the store's column is {kinds[name]}, the payload's {kind} "
                                  "(wrong type)", column=name, rule="wrong type")
        # cosine vectors arrive of unit length and are kept bit for bit (checked, as a replay does)
        metric = "ip" if st.metric == "cosine" else st.metric
        # the payload's columns as declared (names checked by _checked): a source may hold a
        # declared column whose name an undeclared batch would take for a typo ("valid_form")
        batch = normalize_rows(t.rows, dim=st.dim, metric=metric, known_fact_type=st.policy.knows,
                               now_us=now_us(), metadata={**t.metadata, **kinds})
        if {k: kind for k, (kind, _) in batch.metadata.items()} != t.metadata:
            raise SchemaError("payload: the metadata columns do not match their kinds", rule="payload")
        if st.metric == "cosine":
            v = batch.vector.astype(np.float64)
            off = np.flatnonzero(np.abs(np.einsum("ij,ij->i", v, v) - 1.0) > 1e-4)
            if len(off):
                raise SchemaError(f"column 'vector', row {int(off[0])}: not of unit length in a cosine store",
                                  column="vector", row=int(off[0]), rule="vector dimension")
        held = st.contains(batch.ids)
        if held.any():
            raise QueryError(f"id {int(batch.ids[np.flatnonzero(held)[0]])} is already in the target")
        for name in batch.stem_names:
            if st.stem_code(name) >= 0:
                raise QueryError(f"stem {name!r} is already in the target (a stem moves whole)")
        a = t.amendments
        ev = {f: a.column(c).to_numpy() for f, c in zip(AMEND_FIELDS, ("tx", "valid_to", "deprecated_from"))}
        for f, v in ev.items():  # the range every stored event keeps (as a replay checks it)
            out = ((v < MIN_TIME_US) | (v > MAX_TIME_US)) & ((v != OPEN_END) | (f == "amend_tx"))
            if out.any():
                raise SchemaError(f"payload: event {int(np.flatnonzero(out)[0])}: {f} is out of range",
                                  rule="payload")
        rows = len(st) + a.column("row").to_numpy().astype(np.int64)
        # one write: the rows, and their events checked against them (StoreState.append)
        return st.commit(batch, rows=rows, **ev) if len(a) else st.commit(batch)


def _checked(p: Any, st: Any) -> Transfer:
    """``p`` if it is a well-formed :class:`Transfer` for the store ``st`` (layout only: the
    values are checked by the write), else SchemaError naming what is wrong (ConfigError:
    another dim or metric)."""
    def bad(what: str) -> None:
        raise SchemaError(f"payload: {what}", rule="payload")
    if not isinstance(p, Transfer):
        bad(f"not a Transfer ({type(p).__name__})")
    if p.format != FORMAT:
        bad(f"format {p.format!r}, not {FORMAT}")
    if isinstance(p.dim, bool) or not isinstance(p.dim, int) or not 1 <= p.dim <= 65536 or \
            p.metric not in ("cosine", "ip", "l2"):
        bad("dim or metric is not one an engine has")
    if p.dim != st.dim or p.metric != st.metric:
        raise ConfigError(f"the payload holds {p.metric} vectors of dim {p.dim}; this engine {st.metric} of dim "
                          f"{st.dim}")
    if not isinstance(p.metadata, dict) or any(
            not isinstance(k, str) or k in COLUMNS or v not in _metadata.ARROW_TYPES for k, v in p.metadata.items()):
        bad("metadata must map column names to kinds")
    for name in p.metadata:
        _metadata.check_name(name)  # SchemaError naming a name no store keeps
    if not isinstance(p.rows, pa.Table) or not p.rows.schema.equals(rows_schema(p.dim, p.metadata)):
        bad("rows are not in the transfer schema")
    if not isinstance(p.amendments, pa.Table) or not p.amendments.schema.equals(AMEND_SCHEMA):
        bad("amendments are not in the transfer schema")
    try:
        p.rows.validate(full=True)
        p.amendments.validate(full=True)
    except pa.ArrowInvalid as e:
        bad(f"invalid Arrow data ({e})")
    if any(c.null_count for c in p.amendments.columns) or p.rows.column("id").null_count or \
            p.rows.column("vector").null_count:
        bad("nulls in ids, vectors or amendments")
    if len(p.amendments) and int(np.max(p.amendments.column("row").to_numpy())) >= len(p):
        bad("an amendment names a row the payload does not hold")
    return p
