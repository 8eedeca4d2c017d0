"""A small saved store, made with the public API, and what fuzz_open.py needs to mutate it:
the list of its files, and :func:`reseal` (recompute the checksums the store keeps, so that a
mutation reaches the parsers behind them).

Only :func:`reseal` knows where checksums live (format 2: the seal in CURRENT, the
manifest's file digests); the rest follows (files are found by walking the store, so the
write-ahead log and LOCK are mutated too).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

import chrono_engine as ce

DIM = 4


def build_store(path: Path) -> ce.Engine:
    """Save a store of 11 rows to ``path`` (two fact types, stems with versions, a deprecation
    in amend.arrow; a supersede and a retraction in its log; every string column; metadata
    columns in metadata.arrow) and return
    its engine. The files are the same on every run but for the snapshot's random name (in
    CURRENT and the folder's name)."""
    rng = np.random.default_rng(7)
    eng = ce.Engine(dim=DIM, decay=ce.DecayPolicy({"news": ce.Exponential(half_life=30)},
                                                  default=ce.Exponential(half_life=365)),
                    threads=1, M=4, ef_construction=16)
    n = 10
    eng.ingest({"vector": rng.normal(size=(n, DIM)).astype(np.float32),
                "valid_from": [f"2020-0{1 + i % 9}-01" for i in range(n)],
                "valid_to": [None if i % 3 else "2030-01-01" for i in range(n)],
                "observed_at": ["2021-01-01"] * n, "ingested_at": ["2021-06-01"] * n,
                "reliability": np.linspace(0.2, 1.0, n), "fact_type": ["news", "general"] * (n // 2),
                "stem_id": [f"doc-{i % 4}" for i in range(n)], "version": [f"v{1 + i // 4}" for i in range(n)],
                "content": [f"content {i}" for i in range(n)], "title": [f"title {i}" for i in range(n)],
                "source": ["src"] * n, "modality": ["text"] * n,
                "tenant": [f"t{i % 3}" if i % 4 else None for i in range(n)], "level": np.arange(n),
                "acl": [["hr", "all"][: i % 3] for i in range(n)]})
    eng.deprecate([2], effective_at="2020-06-01", at="2021-07-01")  # a lifecycle event in amend.arrow
    eng.save(path)
    eng = ce.Engine.open(path, threads=1)  # the writes below go to the log, so it is fuzzed too
    eng.supersede("doc-1", {"vector": rng.normal(size=(1, DIM)).astype(np.float32),
                            "valid_from": ["2022-01-01"], "ingested_at": ["2022-02-01"],
                            "content": ["new"]},
                  effective_at="2022-01-01", version="v9")
    eng.retract([3], at="2023-01-01")
    eng.close()
    return eng


def store_files(root: Path) -> list[str]:
    """The regular files of the store at ``root``, relative, in a stable order (snapshot
    names differ between stores; the sort puts files at the same positions)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def reseal(root: Path) -> None:
    """Recompute every checksum an attacker without the key can (store format 2): the
    SHA-256 values the manifest keeps for the data files, then the manifest's own SHA-256 in
    the seal (CURRENT). Leave the store alone when CURRENT or the manifest does not parse
    (the mutation is then tested as it is)."""
    try:
        seal = json.loads((root / "CURRENT").read_text(encoding="utf-8"))
        snap = root / seal["snapshot"]
        if snap.parent != root:
            return
        manifest_path = snap / "manifest.json"
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = manifest["files"]
        for name in files:
            if isinstance(name, str) and (snap / name).is_file() and (snap / name).parent == snap:
                files[name] = hashlib.sha256((snap / name).read_bytes()).hexdigest()
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return
    body = json.dumps(manifest, indent=1).encode("utf-8", "surrogatepass")
    manifest_path.write_bytes(body)
    seal["manifest_sha256"] = hashlib.sha256(body).hexdigest()
    (root / "CURRENT").write_text(json.dumps(seal), encoding="utf-8")
