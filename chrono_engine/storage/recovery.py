"""Rebuilding an engine's state from a verified snapshot: :func:`restore` (meta.arrow
checked against the data model, graph.bin loaded and matched to it by fingerprint, the
amendments and the probe partition), :func:`replay` of the snapshot's log, and
:func:`open_log`, the log's writer."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from .. import _wal
from .. import metadata as _metadata
from .._columns import numpy_dtype
from .._state import STRING_COLUMNS, StoreState
from .._time import MAX_TIME_US, MIN_TIME_US, OPEN_END
from ..errors import ChronoError, CorruptStoreError, SchemaError
from .checkpoint import vector_hashes
from .layout import AMEND_SCHEMA, FILES_OF, META_SCHEMA, NO_CENTROID, PARTITION_SCHEMA, centroid_schema
from .open import Snapshot

__all__ = ["restore", "replay", "follow", "open_log"]


def _check_meta(table: pa.Table, snap: Snapshot) -> dict:
    """meta.arrow against the data model's invariants; returns its numeric columns as NumPy
    arrays. CorruptStoreError naming the column and the first bad row."""
    where = f"{snap.root}: {snap.name}/meta.arrow"
    if table.schema.remove_metadata() != META_SCHEMA:
        try:
            names = ", ".join(table.schema.names)[:300]
        except UnicodeDecodeError:  # column names that are not UTF-8
            names = "names that are not UTF-8"
        raise CorruptStoreError(f"{where}: columns or types differ from the format ({names})")
    try:
        table.validate(full=True)
    except pa.ArrowException as e:
        raise CorruptStoreError(f"{where}: invalid Arrow data ({e})") from None
    if len(table) != snap.rows:
        raise CorruptStoreError(f"{where}: {len(table)} rows, manifest says {snap.rows}")
    numeric = [f.name for f in META_SCHEMA if f.type != pa.string()]
    for name in numeric:
        if table.column(name).null_count:
            raise CorruptStoreError(f"{where}: column {name!r} has nulls")
    c = {name: np.ascontiguousarray(table.column(name).to_numpy(), dtype=numpy_dtype(table.schema.field(name).type))
         for name in numeric}

    def fail(col: str, bad: np.ndarray, rule: str) -> None:
        idx = np.flatnonzero(bad)
        if len(idx):
            raise CorruptStoreError(f"{where}: column {col!r}, row {int(idx[0])}: {rule}")

    for name in ("valid_from", "observed_at", "ingested_at"):
        fail(name, (c[name] < MIN_TIME_US) | (c[name] > MAX_TIME_US), "time outside years 1..9999")
    for name in ("valid_to", "retracted_at"):
        v = c[name]
        fail(name, ((v < MIN_TIME_US) | (v > MAX_TIME_US)) & (v != OPEN_END), "time outside years 1..9999")
    fail("valid_to", c["valid_to"] <= c["valid_from"], "valid_to <= valid_from")
    fail("retracted_at", c["retracted_at"] <= c["ingested_at"], "retracted_at <= ingested_at")
    r = c["reliability"]
    fail("reliability", ~(np.isfinite(r) & (r > 0) & (r <= 1)), "reliability outside (0, 1]")
    fail("fact_type_code", c["fact_type_code"] >= max(len(snap.fact_types), 1), "fact type code out of range")
    fail("stem_code", (c["stem_code"] < -1) | (c["stem_code"] >= len(snap.stems)), "stem code out of range")
    ids = c["id"]
    identity = len(ids) == 0 or (ids[0] == 0 and ids[-1] == len(ids) - 1 and bool((np.diff(ids) == 1).all()))
    if not identity and len(np.unique(ids)) != len(ids):  # ids 0..n-1 (the default) are unique
        order = np.argsort(ids, kind="stable")
        dup = order[1:][ids[order][1:] == ids[order][:-1]]
        raise CorruptStoreError(f"{where}: column 'id', row {int(dup.min())}: duplicate id")
    # the names beside the codes, and the version strings beside their keys, agree
    _agree(table.column("fact_type"), snap.fact_types, c["fact_type_code"].astype(np.int64), "fact_type", fail)
    _agree(table.column("stem_id"), snap.stems, c["stem_code"].astype(np.int64), "stem_id", fail)
    enc = table.column("version").combine_chunks().dictionary_encode()
    from ..schema import parse_version
    known = np.array([_version_key_or(parse_version, v, -1) for v in enc.dictionary.to_pylist()] + [0],
                     dtype=np.float64)  # -1: unparsable; float so that -1 never equals a key
    idx = enc.indices.fill_null(len(enc.dictionary)).to_numpy(zero_copy_only=False)
    fail("version_key", known[idx] != c["version_key"].astype(np.float64) if len(idx) else np.zeros(0, bool),
         "disagrees with the version string")
    return c


def _agree(got: pa.ChunkedArray, names: list, codes: np.ndarray, col: str, fail: Any) -> None:
    """Row names equal ``names[code]`` (code -1 or an empty list: null)."""
    if not len(codes):
        return
    pick = np.where(codes < 0, len(names), codes)
    want = pa.array(names + [None], pa.string()).take(pa.array(pick))
    got = got.combine_chunks()
    same = pc.fill_null(pc.equal(want, got), False).to_numpy(zero_copy_only=False)
    both_null = (want.is_null().to_numpy(zero_copy_only=False) & got.is_null().to_numpy(zero_copy_only=False))
    fail(col, ~(same | both_null), "name disagrees with its code")


def _version_key_or(parse_version: Any, v: str, default: int) -> int:
    try:
        return parse_version(v)
    except ChronoError:
        return default


def restore(state: StoreState, snap: Snapshot) -> None:
    """Fill a new, empty ``state`` (made with the snapshot's dim, metric, policy and
    parameters) from a verified snapshot. Raises CorruptStoreError."""
    root = snap.root
    try:
        table = ipc.open_file(pa.memory_map(str(snap.path / "meta.arrow"), "r")).read_all()
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{root}: {snap.name}/meta.arrow is unreadable ({e})") from None
    c = _check_meta(table, snap)
    state.fact_types = list(snap.fact_types)
    state.fact_code = {t: i for i, t in enumerate(state.fact_types)}
    state.stems.add_all(snap.stems)
    if state.fact_types:
        state.core.set_decay(state.policy.kernel_table(state.fact_types))
    if "metadata.arrow" in FILES_OF[snap.format_version]:
        _restore_metadata(state, snap, len(table))  # before the rows: the core's rows past its size
    if not len(table):
        if "amend.arrow" in FILES_OF[snap.format_version]:
            _restore_amendments(state, snap)  # none may name a row
        return
    try:
        state.core.restore(str(snap.path / "graph.bin"), c["valid_from"], c["valid_to"], c["observed_at"],
                           c["ingested_at"], c["retracted_at"], c["version_key"], c["reliability"],
                           c["stem_code"], c["fact_type_code"], c["deprecated"].astype(np.uint8), c["id"],
                           n_stems=len(snap.stems))
    except (RuntimeError, ValueError, KeyError, MemoryError, pa.ArrowException) as e:
        raise CorruptStoreError(f"{root}: {snap.name}/graph.bin or meta.arrow is damaged ({e})") from None
    # the two files belong together: each row's vector is the one its metadata was saved with
    # (catches rows reordered, swapped, or a graph.bin from another store of the same shape)
    off = np.flatnonzero(vector_hashes(state) != c["vector_hash"])
    if len(off):
        raise CorruptStoreError(f"{root}: {snap.name}/graph.bin and meta.arrow disagree: row {int(off[0])} "
                                f"(id {int(c['id'][off[0]])}) has another vector than the one saved with it")
    state.table = table.select(list(STRING_COLUMNS))
    state.parts = [len(table)]
    if "amend.arrow" in FILES_OF[snap.format_version]:
        _restore_amendments(state, snap)
    if "partition.arrow" in FILES_OF[snap.format_version]:
        _restore_partition(state, snap)


def _restore_metadata(state: StoreState, snap: Snapshot, n: int) -> None:
    """metadata.arrow checked against the manifest's columns (names, kinds, n rows, the
    kinds' rules: no NaN, times in range, no null inside a list) into the core, before its
    n rows are restored (Store.append_user)."""
    where = f"{snap.root}: {snap.name}/metadata.arrow"
    try:
        t = ipc.open_file(pa.memory_map(str(snap.path / "metadata.arrow"), "r")).read_all()
        t.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{where} is unreadable ({e})") from None
    kinds = snap.metadata
    names = [] if not kinds else list(kinds)
    if (t.column_names != names and not (not names and t.column_names == ["_rows"])) or len(t) != n:
        raise CorruptStoreError(f"{where}: columns {t.column_names[:8]} of {len(t)} rows; the manifest "
                                f"has {names[:8]} and {n} rows")
    try:
        state.declare(kinds)
        if not n or not names:
            return
        parts = []
        for name, kind in kinds.items():
            col = t.column(name)
            arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            if pa.types.is_dictionary(arr.type) and kind == "string":
                arr = arr.dictionary_decode()
            if arr.type != _metadata.ARROW_TYPES[kind]:
                raise CorruptStoreError(f"{where}: column {name!r} is {arr.type}, not {kind}")
            got, arr = _metadata.normalize_column(name, arr, n, kind, None)
            parts.append(_metadata.core_part(state.user[name][0], kind, arr))
        state.core.append_user(0, n, parts)
    except (SchemaError, ValueError, IndexError) as e:
        raise CorruptStoreError(f"{where} is damaged ({e})") from None


def _restore_partition(state: StoreState, snap: Snapshot) -> None:
    """partition.arrow and centroids.arrow, checked (schemas, no nulls, finite centroids,
    each row's centroid in range; the core checks the rest), as the store's partition. Any
    assignment gives correct answers (it only decides how soon a probe stops), but a
    damaged one is refused like any damaged file."""
    where = f"{snap.root}: {snap.name}"
    try:
        a = ipc.open_file(pa.memory_map(str(snap.path / "partition.arrow"), "r")).read_all()
        c = ipc.open_file(pa.memory_map(str(snap.path / "centroids.arrow"), "r")).read_all()
        for t, schema, f in ((a, PARTITION_SCHEMA, "partition.arrow"), (c, centroid_schema(snap.dim), "centroids.arrow")):
            if t.schema.remove_metadata() != schema:
                raise CorruptStoreError(f"{where}/{f}: columns or types differ from the format")
            t.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{where}/partition.arrow or centroids.arrow is unreadable ({e})") from None
    col = c.column("centroid").combine_chunks()
    if a.column("centroid").null_count or col.null_count or col.values.null_count:
        raise CorruptStoreError(f"{where}: the partition has nulls")
    C, info = len(c), snap.partition
    if (C == 0) != (info is None) or (C == 0 and len(a)):
        raise CorruptStoreError(f"{where}: centroids.arrow ({C} centroids), partition.arrow ({len(a)} rows) "
                                "and the manifest's partition field disagree")
    if C == 0:
        return
    if state.metric == "l2" or C >= NO_CENTROID or len(a) > len(state):
        raise CorruptStoreError(f"{where}/partition.arrow: {C} centroids over {len(a)} rows do not fit "
                                f"a {state.metric} store of {len(state)} rows")
    cents = np.ascontiguousarray(col.values.to_numpy(zero_copy_only=False), np.float32).reshape(C, snap.dim)
    assignment = np.ascontiguousarray(a.column("centroid").combine_chunks().to_numpy(zero_copy_only=False), np.uint16)
    bad = np.flatnonzero((assignment >= C) & (assignment != NO_CENTROID))
    if len(bad):
        raise CorruptStoreError(f"{where}/partition.arrow: row {int(bad[0])} names centroid "
                                f"{int(assignment[bad[0]])} of {C}")
    try:
        state.core.set_partition(cents, info["delta"])
        state.core.assign_partition(0, assignment)
    except (ValueError, IndexError) as e:
        state.core.clear_partition()
        raise CorruptStoreError(f"{where}: the partition is damaged ({e})") from None
    state.partition_centroids = cents
    state.partition_built_at = info["built_at"]


def _restore_amendments(state: StoreState, snap: Snapshot) -> None:
    """amend.arrow, checked (schema, ranges; the core checks rows, order against
    ingested_at and valid_from, and the per-row limit), applied to the restored rows."""
    where = f"{snap.root}: {snap.name}/amend.arrow"
    try:
        t = ipc.open_file(pa.memory_map(str(snap.path / "amend.arrow"), "r")).read_all()
        if t.schema.remove_metadata() != AMEND_SCHEMA:
            raise CorruptStoreError(f"{where}: columns or types differ from the format")
        t.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise CorruptStoreError(f"{where} is unreadable ({e})") from None
    if not len(t):
        return
    a = {}
    for name in AMEND_SCHEMA.names:
        if t.column(name).null_count:
            raise CorruptStoreError(f"{where}: column {name!r} has nulls")
        a[name] = np.ascontiguousarray(t.column(name).to_numpy(), dtype=numpy_dtype(t.schema.field(name).type))
    for name in ("tx", "valid_to", "deprecated_from"):
        v = a[name]
        bad = (v < MIN_TIME_US) | (v > MAX_TIME_US)
        if name != "tx":
            bad &= v != OPEN_END
        if bad.any():
            raise CorruptStoreError(f"{where}: column {name!r}, row {int(np.flatnonzero(bad)[0])}: "
                                    "time outside years 1..9999")
    try:
        state.core.amend(a["row"], a["tx"], a["valid_to"], a["deprecated_from"])
    except (ValueError, IndexError) as e:
        raise CorruptStoreError(f"{where}: {e}") from None


# ----------------------------------------------------------------------------- the log

def replay(state: StoreState, snap: Snapshot) -> tuple[int, int]:
    """Apply the snapshot's log to a restored ``state``; returns (records applied, byte
    offset where the valid records end). Raises CorruptStoreError."""
    path = snap.path / _wal.LOG_NAME
    where = f"{snap.root}: {snap.name}/{_wal.LOG_NAME}"
    try:
        commits, end = _wal.read(path, snap.name, _wal.blake_key(snap.key))
    except FileNotFoundError:
        raise CorruptStoreError(f"{where} is missing") from None
    except CorruptStoreError as e:
        raise CorruptStoreError(f"{snap.root}: {e}") from None
    for i, (_, commit) in enumerate(commits):
        try:
            state.apply(commit, replay=True)
        except ChronoError as e:
            raise CorruptStoreError(f"{where}: record {i + 1} cannot be applied ({e})") from None
    return len(commits), end


def follow(state: StoreState, root: Path, name: str, key: bytes | None, after: tuple[int, int] | None) -> tuple[int, int]:
    """Apply to ``state`` the writes acknowledged in snapshot ``name``'s log after position
    ``after`` (None: from its first record; :func:`._wal.read_acknowledged`); returns the
    position reached. The caller holds ``state.write``. A record that cannot be applied is a
    CorruptStoreError; the records before it stay applied, and the position returned with the
    error (``e.position``) is theirs. FileNotFoundError when the snapshot's log is gone (a
    checkpoint replaced it)."""
    where = f"{root}: {name}/{_wal.LOG_NAME}"
    try:
        records = _wal.read_acknowledged(root / name / _wal.LOG_NAME, name, _wal.blake_key(key), after)
    except CorruptStoreError as e:
        raise CorruptStoreError(f"{root}: {e}") from None
    pos = after
    appended = False
    for commit, at in records:
        try:
            state.apply(commit, replay=True)
        except ChronoError as e:
            err = CorruptStoreError(f"{where}: record {at[0]} cannot be applied ({e})")
            err.position = pos
            if appended:
                state.refresh_partition()
            raise err from None
        appended |= commit.append is not None
        pos = at
    if appended:
        state.refresh_partition()
    return (0, _wal.records_start(name)) if pos is None else pos


def open_log(snap_path: Path, name: str, key: bytes | None, *, fsync: str, interval: float, seq: int,
             end: int) -> _wal.LogWriter:
    """The writer of a snapshot's log, positioned after record ``seq`` (byte ``end``; -1:
    the end of the file)."""
    return _wal.LogWriter(snap_path / _wal.LOG_NAME, name, _wal.blake_key(key), fsync=fsync,
                          interval=interval, seq=seq, end=end)
