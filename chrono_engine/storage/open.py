"""Opening a store's live snapshot: :class:`Snapshot` (what its manifest says),
:func:`read_snapshot` (the seal, the manifest's checksum, HMAC and every field checked) and
the data files' checksums (:class:`FileCheck` runs them beside the load)."""
from __future__ import annotations

import hashlib
import hmac
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..decay import DecayPolicy
from ..errors import ChronoError, CorruptStoreError, StorageError
from .checkpoint import current
from ..metadata import KIND_CODES, MAX_COLUMNS, check_name
from .layout import (FILES_OF, FORMAT, FORMAT_VERSION, HEX64, MAX_DIM, open_store_file, parse_json, read_bounded,
                     sha256_of)

__all__ = ["Snapshot", "read_snapshot", "FileCheck"]

_MANIFEST_LIMIT = 1 << 30
_MAX_ROWS = 0xFFFFFFF0
_MAX_M = 2048


@dataclass
class Snapshot:
    """A verified snapshot's manifest: what :func:`restore` and the Engine need to rebuild it."""

    root: Path
    path: Path
    name: str
    dim: int
    metric: str
    params: dict
    search: dict
    policy: DecayPolicy
    fact_types: list
    stems: list
    rows: int
    key: bytes | None
    format_version: int = FORMAT_VERSION
    files: dict = field(default_factory=dict)  # data file -> SHA-256 (hex), from the manifest
    partition: dict | None = None  # format 4: the saved partition's delta and built_at (None: none)
    metadata: dict = field(default_factory=dict)  # format 5: the user metadata columns, name -> kind


def read_snapshot(path: str | os.PathLike, key: bytes | None = None, *, seal: dict | None = None,
                  check_files: bool = True) -> Snapshot:
    """The live snapshot of the store at ``path``: seal, manifest (checksum, HMAC when
    ``key`` is given, every field) and data file checksums verified. Raises StorageError
    (not a store) or CorruptStoreError naming the file and field. With
    ``check_files=False`` the data files are not read: the caller checks them with
    :class:`FileCheck` (``snapshot.files`` holds their digests)."""
    root = Path(path)
    seal = current(root) if seal is None else seal  # the caller's, when it read it already
    name = seal["snapshot"]
    snap = root / name
    if snap.is_symlink():  # its files are opened without following links; the folder too
        raise CorruptStoreError(f"{root}: snapshot {name} is a symbolic link, not a folder of the store")
    try:
        body = read_bounded(snap / "manifest.json", root, _MANIFEST_LIMIT)
    except FileNotFoundError:
        raise CorruptStoreError(f"{root}: snapshot {name} has no manifest.json") from None
    if not hmac.compare_digest(hashlib.sha256(body).hexdigest(), seal["manifest_sha256"]):
        raise CorruptStoreError(f"{root}: {name}/manifest.json is corrupt (checksum mismatch)")
    mac = seal.get("manifest_hmac_sha256")
    if key is not None:
        if mac is None:
            raise CorruptStoreError(f"{root}: the store is not authenticated (saved without a key), "
                                    "but a key was given")
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).hexdigest(), mac):
            raise CorruptStoreError(f"{root}: {name}/manifest.json fails authentication (wrong key, "
                                    "or the store was altered)")
    elif mac is not None:
        raise StorageError(f"{root}: the store was saved with a key; open it with key= (or "
                           "CHRONO_STORE_KEY)")
    out = _manifest(parse_json(body, f"{root}: {name}/manifest.json"), root, snap, name, key)
    out.snapshot.files = out.files
    if check_files:
        _check_files(out.snapshot)
    return out.snapshot


def _check_files(snap: Snapshot) -> None:
    """Each data file of the snapshot against its SHA-256 in the (verified) manifest."""
    for fname, digest in snap.files.items():
        try:
            got = sha256_of(snap.path / fname, snap.root)
        except FileNotFoundError:
            raise CorruptStoreError(f"{snap.root}: {snap.name}/{fname} is missing") from None
        if not hmac.compare_digest(got, digest):
            raise CorruptStoreError(f"{snap.root}: {snap.name}/{fname} is corrupt (checksum mismatch)")


class FileCheck:
    """The data files' checksums (:func:`read_snapshot`'s last step) on a thread of their
    own, so that an open hashes the files while it loads them: at 1M × 384 the SHA-256 of
    ~1.9 GB takes ~4 s, about what restoring takes. Loading before the files are verified
    is safe because every loader treats the files as untrusted (docs/storage.md); the open
    is refused, and the loaded engine dropped, if a checksum then fails. :meth:`result`
    waits and raises the check's error. Made after the files were found to be regular
    files (a FIFO, device or link in place of one is refused at once)."""

    def __init__(self, snap: Snapshot) -> None:
        for fname in snap.files:  # regular files only, before anything maps one (a FIFO would block)
            try:
                os.close(open_store_file(snap.path / fname, snap.root))
            except FileNotFoundError:
                raise CorruptStoreError(f"{snap.root}: {snap.name}/{fname} is missing") from None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                _check_files(snap)
            except BaseException as e:  # noqa: BLE001 - re-raised by result()
                self._error = e
        self._thread = threading.Thread(target=run, name="chrono-checksums", daemon=True)
        self._thread.start()

    def result(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


@dataclass
class _Manifest:
    snapshot: Snapshot
    files: dict


def _manifest(m: Any, root: Path, snap: Path, name: str, key: bytes | None) -> _Manifest:
    """Every manifest field checked for type and range; CorruptStoreError naming it."""
    where = f"{root}: {name}/manifest.json"

    def bad(field: str, why: str) -> CorruptStoreError:
        return CorruptStoreError(f"{where}: field {field!r} {why}")

    def integer(v: Any, field: str, lo: int, hi: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise bad(field, f"must be an integer in [{lo}, {hi}], got {str(v)[:40]}")
        return v

    def names(v: Any, field: str) -> list:
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise bad(field, "must be a list of strings")
        if len(set(v)) != len(v):
            raise bad(field, "lists a name twice")
        return v

    if not isinstance(m, dict):
        raise CorruptStoreError(f"{where} is not a JSON object")
    want = {"format", "format_version", "chrono_engine", "dim", "metric", "params", "search", "decay",
            "fact_types", "stems", "rows", "keyed", "files"}
    if m.get("format_version") in (4, 5) and type(m.get("format_version")) is int:
        want.add("partition")
    if m.get("format_version") == 5 and type(m.get("format_version")) is int:
        want.add("metadata")
    if set(m) != want:
        missing, extra = sorted(want - set(m)), sorted(set(m) - want)
        raise CorruptStoreError(f"{where}: fields differ from format {FORMAT_VERSION} "
                                f"(missing {missing}, unknown {extra})")
    if m["format"] != FORMAT or type(m["format_version"]) is not int or m["format_version"] not in FILES_OF:
        raise CorruptStoreError(f"{where}: unknown format {str(m['format'])[:40]!r} version "
                                f"{str(m['format_version'])[:20]}")
    dim = integer(m["dim"], "dim", 1, MAX_DIM)
    if m["metric"] not in ("cosine", "ip", "l2"):
        raise bad("metric", "must be 'cosine', 'ip' or 'l2'")
    p = m["params"]
    if not isinstance(p, dict) or set(p) != {"M", "ef_construction", "seed"}:
        raise bad("params", "must hold exactly M, ef_construction and seed")
    params = {"M": integer(p["M"], "params.M", 2, _MAX_M),
              "ef_construction": integer(p["ef_construction"], "params.ef_construction", 1, 1 << 20),
              "seed": integer(p["seed"], "params.seed", 0, (1 << 63) - 1)}
    search = m["search"]
    if not isinstance(search, dict):
        raise bad("search", "must be an object")
    try:
        policy = DecayPolicy.from_dict(m["decay"])
    except ChronoError as e:
        raise bad("decay", f"is not a decay policy ({e})") from None
    except (TypeError, ValueError, OverflowError, RecursionError) as e:
        raise bad("decay", f"is not a decay policy ({type(e).__name__}: {str(e)[:120]})") from None
    fact_types = names(m["fact_types"], "fact_types")
    if len(fact_types) > 65535:
        raise bad("fact_types", "holds more than 65535 names")
    for t in fact_types:
        if not policy.knows(t):
            raise bad("fact_types", f"names {t[:40]!r}, which the decay policy has no profile for")
    stems = names(m["stems"], "stems")
    rows = integer(m["rows"], "rows", 0, _MAX_ROWS)
    if not isinstance(m["keyed"], bool) or m["keyed"] != (key is not None):
        raise bad("keyed", "does not match the seal")
    partition = m.get("partition")
    if partition is not None:
        if not isinstance(partition, dict) or set(partition) != {"delta", "built_at"}:
            raise bad("partition", "must be null or hold exactly delta and built_at")
        d = partition["delta"]
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not (math.isfinite(d) and d >= 0):
            raise bad("partition.delta", "must be a finite number >= 0")
        partition = {"delta": float(d), "built_at": integer(partition["built_at"], "partition.built_at", 0, rows)}
    metadata = {}
    if "metadata" in m:
        md = m["metadata"]
        if not isinstance(md, list) or len(md) > MAX_COLUMNS:
            raise bad("metadata", f"must be a list of at most {MAX_COLUMNS} [name, kind] pairs")
        for pair in md:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str) and pair[1] in KIND_CODES):
                raise bad("metadata", "must list [name, kind] pairs of the metadata kinds")
            try:
                check_name(pair[0])
            except ChronoError as e:
                raise bad("metadata", f"names a column it cannot ({e})") from None
            if pair[0] in metadata:
                raise bad("metadata", "lists a name twice")
            metadata[pair[0]] = pair[1]
    files = m["files"]
    want_files = FILES_OF[m["format_version"]]
    if not isinstance(files, dict) or sorted(files) != sorted(want_files) or \
            not all(isinstance(v, str) and HEX64.fullmatch(v) for v in files.values()):
        raise bad("files", f"must map {', '.join(want_files)} (only) to SHA-256 digests")
    return _Manifest(Snapshot(root=root, path=snap, name=name, dim=dim, metric=m["metric"], params=params,
                              search=search, policy=policy, fact_types=fact_types, stems=stems, rows=rows,
                              key=key, format_version=m["format_version"], partition=partition,
                              metadata=metadata), files)
