"""Reading and re-sealing store files in tests: what a careless operator or an attacker
without the key does to a store (edit a file, then recompute every checksum)."""
from __future__ import annotations

import hashlib
import hmac
import json
import shutil
from pathlib import Path


def snap_dir(path: Path) -> Path:
    """The live snapshot directory of the store at ``path``."""
    return Path(path) / json.loads((Path(path) / "CURRENT").read_text())["snapshot"]


def reseal(path: Path, key: bytes | None = None, files: bool = True) -> None:
    """Recompute the data files' SHA-256 in the manifest (``files``) and the manifest's
    checksum (and HMAC with ``key``) in CURRENT, so that an edited store passes every
    checksum and reaches the parsers behind them."""
    path = Path(path)
    snap = snap_dir(path)
    mf = snap / "manifest.json"
    if files:
        m = json.loads(mf.read_text())
        for name in m["files"]:
            m["files"][name] = hashlib.sha256((snap / name).read_bytes()).hexdigest()
        mf.write_text(json.dumps(m, indent=1))
    body = mf.read_bytes()
    seal = json.loads((path / "CURRENT").read_text())
    seal["manifest_sha256"] = hashlib.sha256(body).hexdigest()
    if key is not None:
        seal["manifest_hmac_sha256"] = hmac.new(key, body, hashlib.sha256).hexdigest()
    (path / "CURRENT").write_text(json.dumps(seal))


def copy_store(src: Path, dst: Path) -> Path:
    """A copy of the store at ``src`` (tests that damage a store work on one)."""
    shutil.copytree(src, dst)
    return dst


def as_format(path: Path, version: int) -> dict:
    """Rewrite the (format 5) store at ``path`` as an older format saved it: the files
    and manifest fields that format did not have removed, re-sealed. Returns the manifest
    written, for tests that edit it further (then :func:`write_manifest`)."""
    gone = {4: ("metadata.arrow",), 3: ("metadata.arrow", "partition.arrow", "centroids.arrow"),
            2: ("metadata.arrow", "partition.arrow", "centroids.arrow", "amend.arrow")}[version]
    snap = snap_dir(path)
    m = json.loads((snap / "manifest.json").read_text())
    for name in gone:
        (snap / name).unlink()
        del m["files"][name]
    del m["metadata"]
    if version < 4:
        del m["partition"]
    m["format_version"] = version
    write_manifest(path, m)
    return m


def write_manifest(path: Path, m: dict) -> None:
    """Replace the store's manifest with ``m`` and re-seal it (data files untouched)."""
    (snap_dir(path) / "manifest.json").write_text(json.dumps(m))
    reseal(path, files=False)
