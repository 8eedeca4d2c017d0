"""Document lifecycle: supersede, retract, history — nothing is ever deleted.

A *stem* (``stem_id``) is one document lineage; its *versions* are rows that share the stem
and a version string (one or more rows — chunks — per version). The lifecycle keeps the
version history of every stem a clean chain on the valid-time axis:

* :func:`supersede` adds a new version effective at ``effective_at``: every version of the
  stem still valid at ``effective_at`` has its ``valid_to`` closed there (never extended) and
  is marked ``deprecated``; the new rows get ``valid_from = effective_at``, an open
  ``valid_to`` and a ``supersedes`` edge (default: the predecessor's version string).
* :func:`retract` ends belief in rows in *transaction time* (``retracted_at``); their valid
  time is left as it was, so "what did we believe at known_at" stays answerable.
* :func:`history` lists every version of a stem with both time axes.
* :func:`on_approval_event` is the hook for external systems (an OA approval webhook): a
  function taking the event payload, not a server.

Rules :func:`supersede` enforces (each raises :class:`~chrono_engine.errors.LifecycleError`,
or :class:`~chrono_engine.errors.NotFoundError` for an unknown stem, before anything
changes):

1. the stem exists (a new lineage starts with :meth:`Engine.ingest`);
2. the rows carry exactly one version, strictly greater (numerically, see
   :func:`~chrono_engine.schema.parse_version`) than *every* version the stem has ever had,
   retracted ones included — a version string is never reused;
3. ``effective_at`` is strictly after the ``valid_from`` of every row of the stem (so the
   closed predecessor keeps a non-empty interval: ``valid_to > valid_from``, the rule the core
   applies); a predecessor that had already ended before ``effective_at`` keeps its end (the
   lineage then has a gap, which its own data put there);
4. ``supersedes``, when given, names an existing version of the stem lower than the new one:
   edges always point to a lower version, so the version graph has no cycles;
5. the new rows are well formed (:func:`~chrono_engine.schema.normalize_rows`), belong to the
   stem, start at ``effective_at``, have an open ``valid_to`` (a version ends only when it is
   superseded) and are not born deprecated.

Atomicity: every check above, plus the checks the core applies to the metadata update, runs
before the first change. The new rows are then appended (itself all-or-nothing) and the
predecessors closed; the close was validated with the core's own rules, so it cannot fail on
its input. Readers that search between the two steps see both versions open, and the newer
one wins every arbitration — never a stem with no version. Writers are serialised by the
engine's write lock.

``deprecated`` and scheduled changes: the core's ``latest`` mode treats a deprecated row as
out of force at *every* T. A supersede whose ``effective_at`` lies in the future (a change
approved today, effective next month) must not retire the predecessor before then, so by
default (``deprecate=None``) the predecessor is marked deprecated only when ``effective_at``
is not after the wall clock; its closed ``valid_to`` retires it at ``effective_at`` either
way. Pass ``deprecate=True`` / ``False`` to force the flag.

>>> import numpy as np, chrono_engine as ce
>>> eng = ce.Engine(dim=2)
>>> ids = eng.ingest([{"vector": [1, 0], "valid_from": "2023-01-01", "stem_id": "TRAVEL",
...                    "version": "v1.0.0", "title": "Travel Expense Policy"}])
>>> new = eng.supersede("TRAVEL", [{"vector": [1, 0.1]}], effective_at="2026-03-01",
...                     version="v2.0.0")
>>> h = eng.history("TRAVEL")
>>> h.column("version").to_pylist(), h.column("deprecated").to_pylist()
(['v1.0.0', 'v2.0.0'], [True, False])
>>> [str(t)[:10] if t else None for t in h.column("valid_to").to_pylist()]
['2026-03-01', None]
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ._args import array, id_array, shown
from ._embedder import is_temporal, text_vectors
from ._state import ALL_KNOWN, StoreState, embed_content, strings_at
from ._time import OPEN_END, errors_as, iso as _iso, now_us, scalar_us
from .errors import LifecycleError, NotFoundError, SchemaError
from .schema import columns_of, format_version, parse_version

# supersede / retract / history / apply_event work on an engine's StoreState and are
# reached through the Engine's methods; on_approval_event is the public hook.
__all__ = ["on_approval_event", "HISTORY_SCHEMA", "supersede", "retract", "deprecate", "history", "get",
           "apply_event"]

_TS = pa.timestamp("us", tz="UTC")

#: Columns of :func:`history`, in order.
HISTORY_SCHEMA = pa.schema([
    ("id", pa.uint64()), ("stem_id", pa.string()), ("version", pa.string()),
    ("supersedes", pa.string()), ("valid_from", _TS), ("valid_to", _TS),
    ("ingested_at", _TS), ("retracted_at", _TS), ("deprecated", pa.bool_()),
    ("deprecated_from", _TS), ("amended_at", _TS), ("title", pa.string()), ("content", pa.string()),
])


def _time(value: Any, name: str) -> int:
    with errors_as(LifecycleError):
        return scalar_us(value, name, stored=True)


def _check_stem(stem_id: Any) -> str:
    if not isinstance(stem_id, str) or not stem_id:
        raise LifecycleError(f"stem_id must be a non-empty string, got {shown(stem_id)}")
    return stem_id


def _stem(state: StoreState, stem_id: str, known_at: int = ALL_KNOWN, where: Any = None, *,
          whole: bool = False) -> tuple[np.ndarray, dict]:
    """The rows of a stem (ascending) and their columns as known at ``known_at`` (default:
    every event recorded): O(rows of the stem), never a pass over the store. ``where``: only
    the rows that filter passes (``whole``: the stem only when it passes every row); a stem
    left without rows is unknown, with the same error."""
    code = state.stem_code(stem_id)
    rows = state.stem_rows(code) if code >= 0 else None
    if rows is not None and where is not None:
        ok = state.passing(where, rows)
        rows = (rows if ok.all() else None) if whole else rows[ok]
    if rows is None or not len(rows):
        raise NotFoundError(f"unknown stem {shown(stem_id)} (a new lineage starts with Engine.ingest)")
    return rows, state.columns_at(rows, known_at)


def _column_of(n: int, value: Any) -> list:
    return [value] * n


# ----------------------------------------------------------------------------- supersede

def supersede(state: StoreState, stem_id: str, rows: Any, effective_at: Any, *,
              version: str | None = None, supersedes: str | None = None,
              deprecate: bool | None = None, embedder: Any = None, where: Any = None) -> np.ndarray:
    """Add a new version of ``stem_id`` effective at ``effective_at``; returns its ids
    (:meth:`Engine.supersede <chrono_engine.Engine.supersede>`).

    ``rows``: the new version's rows in any form :meth:`Engine.ingest` takes (``vector``
    required, or ``content`` and an ``embedder``: a time-aware one embeds them at
    ``effective_at``, a plain text embedder the text alone). Defaults filled in when a column is absent: ``stem_id`` = the stem,
    ``valid_from`` = ``effective_at``, ``version`` = the ``version`` argument, ``supersedes``
    = the ``supersedes`` argument or else the predecessor's version string. Every version of
    the stem still valid at ``effective_at`` is closed there and marked deprecated (see the
    module docstring for ``deprecate``). Raises :class:`LifecycleError` /
    :class:`NotFoundError` / :class:`~chrono_engine.errors.SchemaError` and changes nothing
    when a rule is broken. ``where``: a filter limiting the write: a stem with a row it
    does not pass is unknown (:class:`NotFoundError`), and a new row it does not pass (its
    inherited metadata included) is a SchemaError (rule ``outside where``).
    """
    stem_id = _check_stem(stem_id)
    eff = _time(effective_at, "effective_at")
    _check_options(version, supersedes, deprecate)
    where = _where(where)
    try:  # before the write lock: embedding is slow
        rows = embed_content(embedder, rows, at_us=eff)
    except SchemaError as e:
        raise LifecycleError(f"rows: {e}") from None
    with state.write:
        return _supersede_locked(state, stem_id, rows, eff, version, supersedes, deprecate, where)


def _where(where: Any) -> Any:
    """A ``where=`` limiting a call, checked (its shape; its fields when it is compiled)."""
    from .search import filters
    return filters.parse(where)


def _check_options(version: Any, supersedes: Any, deprecate: Any) -> None:
    if deprecate is not None and not isinstance(deprecate, (bool, np.bool_)):
        raise LifecycleError(f"deprecate must be True, False or None, got {shown(deprecate)}")
    for name, v in (("version", version), ("supersedes", supersedes)):
        if v is not None and not isinstance(v, str):
            raise LifecycleError(f"{name} must be a version string, got {type(v).__name__} {shown(v)}")


def _supersede_locked(state: StoreState, stem_id: str, rows: Any, eff: int, version: str | None,
                      supersedes: str | None, deprecate: bool | None, where: Any = None) -> np.ndarray:
    """The body of :func:`supersede`; the caller holds ``state.write``."""
    now = now_us()
    mine, cols = _stem(state, stem_id, where=where, whole=True)
    strings = state.strings()
    keys = cols["version"]
    vfs = cols["valid_from"]
    vts = cols["valid_to"]
    head_key = int(keys.max())
    head_rows = mine[keys == head_key]
    head_version = strings.column("version")[int(head_rows[0])].as_py()
    existing = {int(k) for k in keys}

    raw = columns_of(rows)
    if "vector" not in raw:
        raise LifecycleError("rows need a 'vector' column (the new version's embeddings), or 'content' "
                             "and an engine embedder")
    try:
        n = len(raw["vector"])
    except TypeError:
        raise LifecycleError("rows: 'vector' must be a column of vectors") from None
    if n == 0:
        raise LifecycleError("rows: the new version has no rows")
    raw = dict(raw)
    raw.setdefault("stem_id", _column_of(n, stem_id))
    raw.setdefault("valid_from", _column_of(n, eff))
    if version is not None:
        if "version" in raw:
            raise LifecycleError("give the version either as an argument or as a column, not both")
        raw["version"] = _column_of(n, version)
    if "supersedes" not in raw:
        edge = supersedes if supersedes is not None else head_version
        raw["supersedes"] = _column_of(n, edge) if edge is not None else pa.nulls(n, pa.string())
    elif supersedes is not None:
        raise LifecycleError("give supersedes either as an argument or as a column, not both")
    # metadata the rows do not give is the predecessor's (its head version's first row)
    inherit = [name for name in state.user if name not in raw]
    if inherit:
        head = state.user_table(np.array([int(head_rows[0])]), inherit)
        zeros = pa.array(np.zeros(n, np.int64))
        for name in inherit:
            raw[name] = head[name].take(zeros)
    batch = state.normalize(raw, now)
    if where is not None:
        state.check_within(batch, where)

    # rule 5: the rows belong to this stem, start at effective_at, stay open
    stems = batch.table.column("stem_id")
    if stems.null_count or any(s != stem_id for s in stems.unique().to_pylist()):
        bad = next(i for i, s in enumerate(stems.to_pylist()) if s != stem_id)
        raise LifecycleError(f"row {bad}: stem_id {shown(stems[bad].as_py())} is not the stem being "
                             f"superseded ({shown(stem_id)})")
    off = np.flatnonzero(batch.valid_from != eff)
    if len(off):
        raise LifecycleError(f"row {int(off[0])}: valid_from {_iso(batch.valid_from[off[0]])} differs from "
                             f"effective_at {_iso(eff)} (a new version starts when it takes effect)")
    closed = np.flatnonzero(batch.valid_to != OPEN_END)
    if len(closed):
        raise LifecycleError(f"row {int(closed[0])}: a new version must have an open valid_to "
                             "(it ends only when superseded)")
    dep = np.flatnonzero(batch.deprecated)
    if len(dep):
        raise LifecycleError(f"row {int(dep[0])}: a new version cannot start deprecated")
    # rule 2: one version, strictly increasing
    vcol = batch.table.column("version")
    if vcol.null_count:
        raise LifecycleError("the new version needs a version string (argument version= or a "
                             "'version' column)")
    if len(np.unique(batch.version_key)) != 1:
        raise LifecycleError(f"rows carry several versions {sorted(set(vcol.to_pylist()))}; "
                             "supersede adds one version at a time")
    new_key = int(batch.version_key[0])
    if new_key <= head_key:
        raise LifecycleError(
            f"version {vcol[0].as_py()} does not increase: stem {shown(stem_id)} already has "
            f"{format_version(head_key)} (versions must be strictly greater than every existing one)")
    # rule 4: the supersedes edge points to an existing, lower version
    scol = batch.table.column("supersedes")
    targets = set(scol.drop_null().to_pylist()) if scol.null_count < len(scol) else set()
    if len(targets) > 1 or (targets and scol.null_count):
        raise LifecycleError("rows disagree on supersedes; a version has one predecessor edge")
    for target in targets:
        tkey = parse_version(target)
        if tkey >= new_key:
            raise LifecycleError(f"supersedes {shown(target)} would make a cycle: an edge must point to a "
                                 f"version lower than {vcol[0].as_py()}")
        if tkey not in existing:
            raise LifecycleError(f"supersedes {shown(target)}: stem {shown(stem_id)} has no such version")
    # rule 3: effective_at after every start of the stem
    late = int(vfs.max())
    if eff <= late:
        who = mine[int(np.argmax(vfs))]
        ver = strings.column("version")[int(who)].as_py()
        raise LifecycleError(
            f"effective_at {_iso(eff)} is not after the start of version {ver} of stem {shown(stem_id)} "
            f"(valid_from {_iso(late)})")
    # the close: an event at the supersede's transaction time (the new rows' ingested_at),
    # so every view known before it still sees the predecessors' intervals as they were
    tx = np.unique(batch.ingested_at)
    if len(tx) != 1:
        raise LifecycleError("the new rows' ingested_at differ: a supersede is one transaction at one time")
    tx = int(tx[0])
    amended = np.where(cols["amended_at"] == OPEN_END, np.iinfo(np.int64).min, cols["amended_at"])
    late = np.flatnonzero((cols["ingested_at"] > tx) | (amended > tx))
    if len(late):
        raise LifecycleError(f"ingested_at {_iso(tx)} is before the ingested_at or the last lifecycle event of row "
                             f"id {int(cols['id'][late[0]])} of the stem: a supersede cannot be known before what "
                             "it closes")
    closing = vts > eff
    to_close = mine[closing]
    k = len(to_close)
    dep_from = eff if deprecate is None or deprecate else OPEN_END
    # one commit: logged as one record and applied in one core call, so neither a crash nor
    # a concurrent reader ever sees half a supersede
    return state.commit(batch, to_close, amend_tx=np.full(k, tx, np.int64),
                        amend_valid_to=np.full(k, eff, np.int64),
                        amend_deprecated_from=np.full(k, dep_from, np.int64))


# ----------------------------------------------------------------------------- retract

def _ids(ids: Any, what: str = "retract") -> np.ndarray:
    """The ids to retract (or deprecate): one id or a 1-D sequence of them, read as
    :meth:`Engine.rows_of` reads ids, each at most once."""
    given = array([ids] if isinstance(ids, (int, np.integer)) else ids, "ids", LifecycleError)
    if given.ndim != 1:
        raise LifecycleError(f"ids must be an id or a 1-D sequence of integer ids, got {shown(ids)}")
    arr, impossible = id_array(given, "ids", LifecycleError)
    if arr.size == 0:
        raise LifecycleError(f"no ids to {what}")
    if impossible:
        raise NotFoundError(f"unknown id {shown(impossible[min(impossible)])}")
    uniq, counts = np.unique(arr, return_counts=True)
    if (counts > 1).any():
        raise LifecycleError(f"id {int(uniq[counts > 1][0])} is given more than once")
    return arr


def retract(state: StoreState, ids: Any, at: Any = None, where: Any = None) -> np.ndarray:
    """Stop believing rows from transaction time ``at`` (default: now); returns the ids.

    Sets ``retracted_at``; valid time, versions and deprecation are untouched, so searches
    with ``known_at`` before ``at`` still see the rows. Rejects (changing nothing) an unknown
    id (:class:`NotFoundError`), an id given twice, one already retracted, and ``at`` not
    after a row's ``ingested_at`` (:class:`LifecycleError`). A retracted head version does not
    reopen its predecessor: publish the correction with :func:`supersede`. ``where``: a
    filter limiting the write; an id whose row it does not pass is unknown alike.
    """
    arr = _ids(ids)
    where = _where(where)
    with state.write:
        return _retract_locked(state, arr, at, where)


def _retract_locked(state: StoreState, arr: np.ndarray, at: Any, where: Any = None) -> np.ndarray:
    at_us = now_us() if at is None else _time(at, "at")
    rows = state.rows_of(arr, where)
    cols = state.columns_at(rows)
    gone = np.flatnonzero(cols["retracted_at"] != OPEN_END)
    if len(gone):
        i = int(gone[0])
        raise LifecycleError(f"id {int(arr[i])} is already retracted (at {_iso(cols['retracted_at'][i])})")
    early = np.flatnonzero(cols["ingested_at"] >= at_us)
    if len(early):
        i = int(early[0])
        raise LifecycleError(f"id {int(arr[i])}: retraction time {_iso(at_us)} is not after its "
                             f"ingested_at {_iso(cols['ingested_at'][i])}")
    state.commit(None, rows, retracted_at=np.full(len(arr), at_us, np.int64))
    return arr


# ----------------------------------------------------------------------------- deprecate

def deprecate(state: StoreState, ids: Any, effective_at: Any = None, at: Any = None,
              where: Any = None) -> np.ndarray:
    """Deprecate rows from valid time ``effective_at`` (default: each row's ``valid_from``,
    i.e. for its whole interval), as an event known from transaction time ``at`` (default:
    now); returns the ids (:meth:`Engine.deprecate <chrono_engine.Engine.deprecate>`).

    Nothing is overwritten: a ``latest`` search at T ≥ ``effective_at`` with ``known_at`` ≥
    ``at`` penalises (or excludes) the rows; every earlier T or earlier ``known_at`` sees them
    as before. Rejects (changing nothing) an unknown id (:class:`NotFoundError`), an id given
    twice and ``at`` before a row's ``ingested_at`` (:class:`LifecycleError`). ``where``: a
    filter limiting the write; an id whose row it does not pass is unknown alike.
    """
    arr = _ids(ids, "deprecate")
    where = _where(where)
    with state.write:
        at_us = now_us() if at is None else _time(at, "at")
        rows = state.rows_of(arr, where)
        cols = state.columns_at(rows)
        early = np.flatnonzero(cols["ingested_at"] > at_us)
        if len(early):
            i = int(early[0])
            raise LifecycleError(f"id {int(arr[i])}: deprecation time {_iso(at_us)} is before its "
                                 f"ingested_at {_iso(cols['ingested_at'][i])}")
        dep = cols["valid_from"] if effective_at is None else \
            np.full(len(rows), _time(effective_at, "effective_at"), np.int64)
        n = len(rows)
        try:
            state.commit(None, rows, amend_tx=np.full(n, at_us, np.int64),
                         amend_valid_to=np.full(n, OPEN_END, np.int64), amend_deprecated_from=dep)
        except ValueError as e:  # the core's rules (e.g. at most 64 events per row)
            raise LifecycleError(f"deprecate: {e}") from None
        return arr


# ----------------------------------------------------------------------------- history

def _ts(us: np.ndarray, open_end: bool) -> pa.Array:
    if not open_end:
        return pa.array(us, _TS)
    is_open = us == OPEN_END
    return pa.array(np.where(is_open, 0, us), _TS, mask=is_open)


def _known_at(known_at: Any) -> int:
    if known_at is None:
        return ALL_KNOWN
    with errors_as(LifecycleError):
        return scalar_us(known_at, "known_at")


def history(state: StoreState, stem_id: str, known_at: Any = None, where: Any = None) -> pa.Table:
    """Every row of every version of ``stem_id`` (see :data:`HISTORY_SCHEMA`), as known at
    transaction time ``known_at`` (default: every event recorded).

    Ordered by version (numerically), then ``valid_from``, then id. Times are UTC
    timestamps; an open ``valid_to`` / ``retracted_at`` is null. ``valid_to``,
    ``deprecated`` and ``deprecated_from`` (null: not deprecated; a row ingested deprecated
    shows its ``valid_from``) apply the lifecycle events known at ``known_at``;
    ``amended_at`` is the transaction time of the latest of them (null: none). Rows ingested
    after ``known_at`` are listed too (their ``ingested_at`` says so), so that one call shows
    the whole lineage. O(rows of the stem). Raises :class:`NotFoundError` for an unknown stem.
    ``where``: only the rows that filter passes (none: the stem is unknown alike).
    """
    stem_id = _check_stem(stem_id)
    k = _known_at(known_at)
    where = _where(where)
    with state.write:  # one consistent snapshot of metadata and strings
        mine, cols = _stem(state, stem_id, k, where)
        strings = state.strings()
    order = np.lexsort((cols["id"], cols["valid_from"], cols["version"]))
    return _rows_table(state, {name: v[order] for name, v in cols.items()}, strings, mine[order])


def get(state: StoreState, ids: Any, known_at: Any = None, where: Any = None) -> pa.Table:
    """The rows of ``ids`` in the order given, as :data:`HISTORY_SCHEMA` (as known at
    ``known_at``, default every event). Raises NotFoundError naming the first unknown id
    (``where``: or the first whose row that filter does not pass, alike)."""
    k = _known_at(known_at)
    where = _where(where)
    with state.write:  # one consistent snapshot of metadata and strings
        rows = state.rows_of(ids, where)
        cols = state.columns_at(rows, k)
        strings = state.strings()
    return _rows_table(state, cols, strings, rows)


def _rows_table(state: StoreState, cols: dict, strings: pa.Table | None, rows: np.ndarray) -> pa.Table:
    """:data:`HISTORY_SCHEMA` for ``rows``, whose metadata ``cols`` holds in the same order,
    then the rows' user metadata columns (:attr:`Engine.metadata`)."""
    s = strings_at(strings, rows)
    table = pa.table([
        pa.array(cols["id"], pa.uint64()),
        state.stem_names(cols["stem"]),
        s.column("version").cast(pa.string()),
        s.column("supersedes").cast(pa.string()),
        _ts(cols["valid_from"], False),
        _ts(cols["valid_to"], True),
        _ts(cols["ingested_at"], False),
        _ts(cols["retracted_at"], True),
        pa.array(cols["deprecated"].astype(bool)),
        _ts(np.maximum(cols["deprecated_from"], cols["valid_from"]), True),
        _ts(cols["amended_at"], True),
        s.column("title").cast(pa.string()),
        s.column("content").cast(pa.string()),
    ], schema=HISTORY_SCHEMA)
    for name, arr in state.user_table(rows).items():
        table = table.append_column(name, arr)
    return table


# ----------------------------------------------------------------------------- external events

_EVENT_KEYS = {"action", "stem_id", "version", "effective_at", "rows", "supersedes", "title",
               "at", "event_id"}


def on_approval_event(engine: Any, event: Mapping[str, Any], *,
                      embed: Callable[[str], Any] | None = None) -> np.ndarray:
    """Apply one lifecycle event from an external system (an OA approval webhook); returns
    the ids it added or retracted.

    A function to call from whatever receives the webhook, not a server. Payloads:

    * ``{"action": "supersede" (default), "stem_id", "version", "effective_at", "rows":
      [row dicts], "supersedes"?, "title"?}`` — a revision was approved: calls
      :func:`supersede`. Rows without a ``vector`` are embedded from their ``content`` with
      ``embed`` (else the engine's ``embedder``); ``title`` fills rows that have none.
      Webhooks are delivered at least once, so a repeat of an applied event (the stem already
      has this version, starting at this ``effective_at``) changes nothing and returns the
      existing ids; a different event for an existing version is rejected.
    * ``{"action": "retract", "stem_id", "version", "at"?}`` — a publication was withdrawn:
      retracts every not yet retracted row of that version (:func:`retract`); a repeat
      changes nothing and returns the version's ids.

    >>> import chrono_engine as ce
    >>> eng = ce.Engine(dim=2)
    >>> _ = eng.ingest([{"vector": [1, 0], "valid_from": "2024-01-01", "stem_id": "SOP-7",
    ...                  "version": "v1"}])
    >>> ev = {"stem_id": "SOP-7", "version": "v2", "effective_at": "2025-01-01",
    ...       "rows": [{"vector": [0, 1], "content": "revised"}]}
    >>> on_approval_event(eng, ev).tolist() == on_approval_event(eng, ev).tolist()  # idempotent
    True
    """
    return engine.on_approval_event(event, embed=embed)


def apply_event(state: StoreState, event: Mapping[str, Any], *, embed: Callable[[str], Any] | None = None,
                embedder: Any = None) -> np.ndarray:
    """:func:`on_approval_event` on an engine's state; ``embedder`` is the engine's."""
    if not isinstance(event, Mapping):
        raise LifecycleError(f"event must be a mapping (the webhook's JSON object), got {type(event).__name__}")
    unknown = set(event) - _EVENT_KEYS
    if unknown:
        raise LifecycleError(f"event has unknown keys {sorted(unknown)} (known: {sorted(_EVENT_KEYS)})")
    action = event.get("action", "supersede")
    stem_id = _check_stem(event.get("stem_id"))
    version = event.get("version")
    if not isinstance(version, str):
        raise LifecycleError(f"event needs a 'version' string, got {shown(version)}")
    key = _version_key(version)
    if action == "retract":
        with state.write:
            _, cols = _stem(state, stem_id)
            sel = cols["version"] == key
            if not sel.any():
                raise LifecycleError(f"stem {shown(stem_id)} has no version {version} to retract")
            live = sel & (cols["retracted_at"] == OPEN_END)
            if not live.any():
                return cols["id"][sel]  # a redelivered event: already retracted
            return _retract_locked(state, cols["id"][live], event.get("at"))
    if action != "supersede":
        raise LifecycleError(f"event action must be 'supersede' or 'retract', got {shown(action)}")
    for name in ("effective_at", "rows"):
        if name not in event:
            raise LifecycleError(f"supersede event needs {name!r}")
    eff = _time(event["effective_at"], "effective_at")
    rows = event["rows"]
    if not isinstance(rows, (list, tuple)) or not rows or not all(isinstance(r, Mapping) for r in rows):
        raise LifecycleError("event 'rows' must be a non-empty list of row objects")
    title = event.get("title")
    supersedes = event.get("supersedes")
    _check_options(version, supersedes, None)
    fixed = []
    for i, r in enumerate(rows):  # embed before taking the write lock
        r = dict(r)
        if "vector" not in r:
            fn = embed if embed is not None else embedder
            if fn is None:
                raise LifecycleError(f"row {i} has no 'vector' and there is no embedder (pass embed=)")
            if not isinstance(r.get("content"), str):
                raise LifecycleError(f"row {i} has neither a 'vector' nor 'content' text to embed")
            if is_temporal(fn):  # time-aware: embedded at the row's own time
                at = r.get("observed_at") or r.get("valid_from") or eff
                r["vector"] = np.asarray(fn.embed_query(r["content"], at=np.array([_time(at, "observed_at")])),
                                         dtype=np.float32).tolist()
            else:  # a plain text embedder, called as at ingest
                def fail(_row: Any, detail: str, i: int = i) -> None:
                    raise LifecycleError(f"row {i}: {detail}")
                r["vector"] = text_vectors(fn, [r["content"]], fail)[0].tolist()
        if title is not None:
            r.setdefault("title", title)
        fixed.append(r)
    with state.write:  # the redelivery check and the supersede see the same store
        _, cols = _stem(state, stem_id)
        same = cols["version"] == key
        if same.any():
            if (cols["valid_from"][same] == eff).all():
                return cols["id"][same]  # a redelivered event: already applied
            raise LifecycleError(f"stem {shown(stem_id)} already has version {version} with a different "
                                 "effective date; a conflicting event is not applied")
        return _supersede_locked(state, stem_id, fixed, eff, version, supersedes, None)


def _version_key(version: str) -> int:
    try:
        return parse_version(version)
    except SchemaError as e:
        raise LifecycleError(f"event version: {e}") from None
