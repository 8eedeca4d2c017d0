"""The store on disk: format, atomic save, verified open.

Layout of a store directory::

    <path>/CURRENT                 the name of the live snapshot directory
    <path>/snap-<uuid hex>/
        graph.bin                  the HNSW graph and vectors (hnswlib's format)
        meta.arrow                 Arrow IPC file: every metadata column, the string columns,
                                   and the fact type / stem names behind the core's codes
        manifest.json              format and version, dimension, metric, HNSW and search
                                   parameters, decay policy, fact types, stems, row count,
                                   SHA-256 of graph.bin and meta.arrow

A save writes and fsyncs a new snapshot, then replaces ``CURRENT`` with ``os.replace`` (the
commit point) and fsyncs the directory; only then are older snapshots removed. A crash at
any point leaves the previous snapshot loadable. An open verifies the checksums before
reading anything else.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ._state import STRING_COLUMNS, StoreState
from ._util import fsync_dir, fsync_file, sha256_file
from ._version import __version__
from .decay import DecayPolicy
from .errors import CorruptStoreError, StorageError

__all__ = ["FORMAT", "FORMAT_VERSION", "Snapshot", "save", "read_snapshot", "restore"]

FORMAT = "chrono_engine.store"
FORMAT_VERSION = 1
_FILES = ("graph.bin", "meta.arrow")


def save(state: StoreState, search: dict, path: str | os.PathLike) -> None:
    """Save ``state`` (with the engine's ``search`` settings) to the directory ``path``,
    atomically (see the module docstring). Raises StorageError; on any failure the
    previous snapshot stays the live one."""
    root = Path(path)
    snap = root / f"snap-{uuid.uuid4().hex}"
    tmp = root / f"CURRENT.{uuid.uuid4().hex}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        snap.mkdir()
    except OSError as e:
        raise StorageError(f"could not save to {root}: {e}") from e
    try:
        with state.write:
            cols = state.columns()
            strings = state.strings()
            state.core.save_graph(str(snap / "graph.bin"))
        table = _meta_table(state, cols, strings)
        with pa.OSFile(str(snap / "meta.arrow"), "wb") as sink:
            with ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "chrono_engine": __version__,
            "dim": state.dim, "metric": state.metric, "params": state.params, "search": dict(search),
            "decay": state.policy.to_dict(), "fact_types": state.fact_types, "stems": state.stems.tolist(),
            "rows": int(len(table)),
            "files": {name: sha256_file(snap / name) for name in _FILES},
        }
        (snap / "manifest.json").write_text(json.dumps(manifest, indent=1))
        for name in (*_FILES, "manifest.json"):
            fsync_file(snap / name)
        fsync_dir(snap)
        tmp.write_text(snap.name)
        fsync_file(tmp)
    except BaseException as e:
        shutil.rmtree(snap, ignore_errors=True)
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise StorageError(f"could not save to {root}: {e}") from e
        raise
    try:
        os.replace(tmp, root / "CURRENT")  # the commit point
    except OSError as e:
        shutil.rmtree(snap, ignore_errors=True)
        tmp.unlink(missing_ok=True)
        raise StorageError(f"could not save to {root}: {e}") from e
    try:
        fsync_dir(root)
    except OSError as e:  # committed, but not known to be durable: say so, keep both copies
        raise StorageError(f"saved to {root}, but syncing the directory failed ({e}); "
                           "the store opens, durability is not guaranteed") from e
    # only now drop older snapshots
    for old in root.glob("snap-*"):
        if old.name != snap.name:
            shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob("CURRENT.*.tmp"):
        stale.unlink(missing_ok=True)


def _meta_table(state: StoreState, cols: dict, strings: pa.Table | None) -> pa.Table:
    """meta.arrow's table: the core's columns, the string columns, and the names behind the
    codes (so that the file reads on its own)."""
    table = pa.table({
        "id": cols["id"], "valid_from": cols["valid_from"], "valid_to": cols["valid_to"],
        "observed_at": cols["observed_at"], "ingested_at": cols["ingested_at"],
        "retracted_at": cols["retracted_at"], "version_key": cols["version"],
        "reliability": cols["reliability"], "fact_type_code": cols["fact_type"],
        "stem_code": cols["stem"], "deprecated": cols["deprecated"].astype(bool),
    })
    if strings is not None:
        strings = strings.slice(0, len(table))
        for name in strings.column_names:
            table = table.append_column(name, strings.column(name))
        types = np.asarray(state.fact_types, dtype=object)
        table = table.append_column("fact_type", pa.array(types[cols["fact_type"]], pa.string()))
        table = table.append_column("stem_id", state.stem_names(cols["stem"]))
    return table


@dataclass
class Snapshot:
    """A verified snapshot's manifest: what :func:`restore` and the Engine need to rebuild it."""

    root: Path
    path: Path
    dim: Any
    metric: Any
    params: dict
    search: dict
    policy: DecayPolicy
    fact_types: list
    stems: list
    rows: int


def read_snapshot(path: str | os.PathLike) -> Snapshot:
    """Find the live snapshot of the store at ``path``, read its manifest and verify the
    checksums of its files. Raises StorageError (not a store) or CorruptStoreError."""
    root = Path(path)
    if not root.is_dir():
        raise StorageError(f"{root} is not a chrono_engine store (not a directory)")
    try:
        name = (root / "CURRENT").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise StorageError(f"{root} is not a chrono_engine store (missing CURRENT)") from None
    except (UnicodeDecodeError, OSError) as e:
        raise CorruptStoreError(f"{root}: CURRENT is unreadable ({e})") from None
    if not re.fullmatch(r"snap-[0-9a-f]{32}", name):
        raise CorruptStoreError(f"{root}: CURRENT names {name[:80]!r}, not a snapshot of this store")
    snap = root / name
    try:
        manifest = json.loads((snap / "manifest.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorruptStoreError(f"{root}: snapshot {name} has no manifest.json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorruptStoreError(f"{root}: {name}/manifest.json is unreadable ({e})") from None
    if not isinstance(manifest, dict):
        raise CorruptStoreError(f"{root}: {name}/manifest.json is not a JSON object")
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise CorruptStoreError(f"{root}: unknown format {manifest.get('format')!r} "
                                f"version {manifest.get('format_version')!r}")
    try:
        files = dict(manifest["files"])
        out = Snapshot(root=root, path=snap, dim=int(manifest["dim"]), metric=manifest["metric"],
                       params=dict(manifest["params"]), search=dict(manifest.get("search", {})),
                       policy=DecayPolicy.from_dict(manifest["decay"]),
                       fact_types=list(manifest["fact_types"]), stems=list(manifest["stems"]),
                       rows=int(manifest["rows"]))
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptStoreError(f"{root}: manifest.json lacks or mangles a field ({e!r})") from None
    for fname, digest in files.items():
        f = snap / fname
        if not f.exists():
            raise CorruptStoreError(f"{root}: {fname} is missing")
        if sha256_file(f) != digest:
            raise CorruptStoreError(f"{root}: {fname} is corrupt (checksum mismatch)")
    if set(files) != set(_FILES):
        raise CorruptStoreError(f"{root}: manifest lists {sorted(files)}, expected graph.bin and meta.arrow")
    return out


def restore(state: StoreState, snap: Snapshot) -> None:
    """Fill a new, empty ``state`` (made with the snapshot's dim, metric, policy and
    parameters) from a verified snapshot. Raises CorruptStoreError."""
    root = snap.root
    try:
        table = ipc.open_file(pa.memory_map(str(snap.path / "meta.arrow"), "r")).read_all()
    except pa.ArrowInvalid as e:
        raise CorruptStoreError(f"{root}: meta.arrow is unreadable ({e})") from None
    if len(table) != snap.rows:
        raise CorruptStoreError(f"{root}: meta.arrow has {len(table)} rows, manifest says {snap.rows}")
    state.fact_types = snap.fact_types
    state.fact_code = {t: i for i, t in enumerate(state.fact_types)}
    try:
        state.stems.add_all(snap.stems)
    except TypeError as e:
        raise CorruptStoreError(f"{root}: manifest.json lists a stem that is not a string ({e})") from None
    if len(state.stems) != len(snap.stems):
        raise CorruptStoreError(f"{root}: manifest.json lists a stem id twice")
    if state.fact_types:
        state.core.set_decay(state.policy.kernel_table(state.fact_types))
    if not len(table):
        return
    col = lambda name, dt: np.ascontiguousarray(table.column(name).to_numpy(), dtype=dt)  # noqa: E731
    try:
        state.core.restore(str(snap.path / "graph.bin"), col("valid_from", np.int64), col("valid_to", np.int64),
                           col("observed_at", np.int64), col("ingested_at", np.int64),
                           col("retracted_at", np.int64), col("version_key", np.uint64),
                           col("reliability", np.float32), col("stem_code", np.int32),
                           col("fact_type_code", np.uint16), col("deprecated", np.uint8),
                           col("id", np.uint64))
    except (RuntimeError, ValueError, KeyError, pa.ArrowException) as e:
        raise CorruptStoreError(f"{root}: the saved graph or metadata is damaged ({e})") from None
    state.table = table.select(list(STRING_COLUMNS))
