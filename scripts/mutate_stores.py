#!/usr/bin/env python3
"""Open thousands of mutated stores; count crashes, hangs and silent wrong opens.

Seed stores (cosine, ip and l2; stems, versions, retractions; a snapshot plus logged writes)
are copied and damaged, one mutation each, by one of these families:

- ``flip``: 1-8 random bytes of a random file (CURRENT, manifest.json, graph.bin,
  meta.arrow, amend.arrow, log.wal) changed;
- ``truncate`` / ``extend``: a random file cut at a random length or grown by random bytes;
- ``graph-header`` / ``graph-body``: a header field of graph.bin (element counts, sizes,
  levels, entry point, M) or a link count / neighbour id / level / label in its body set
  to a random or extreme value — then every checksum recomputed (``resealed``);
- ``meta``: one value of a meta.arrow (or amend.arrow: the lifecycle events) column (times, reliability, codes, ids, version keys,
  names) changed — resealed;
- ``manifest``: one manifest field set to a random or extreme value — resealed;
- ``log``: bytes of a log record changed and its checksum recomputed.

A cut or damaged *last* log record is read as a torn write (one that was never
acknowledged) and dropped, by design: such opens are counted as ``log-tail-dropped``.

Each store is opened (read-only) and searched in a worker process, so a crash is counted,
not fatal; a worker that runs past ``--timeout`` is a hang. An open is *wrong* when the store
opens with content other than the seed's although the mutation was not resealed (the
checksums should have caught it), or when a resealed store opens with content that breaks an
invariant (a search error, rows the seed did not have with bad values). A resealed mutation
that yields a valid store of different content (a title changed, a valid time moved) cannot
be told from a genuine store without a key: it is counted apart as ``valid-resealed``, and
the ``--key`` run shows that with a key every such edit is refused.

    python scripts/mutate_stores.py --stores 10000              # the issue's figure
    python scripts/mutate_stores.py --stores 10000 --key        # stores sealed with a key
    python scripts/mutate_stores.py --stores 300 --seed 2       # a short pass

Run it under the sanitizer build (scripts/sanitize.sh) to count memory errors too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = ("CURRENT", "manifest.json", "graph.bin", "meta.arrow", "amend.arrow", "partition.arrow", "centroids.arrow",
         "metadata.arrow", "log.wal")
KEY = b"mutation-campaign-key"


def snap_dir(path: Path) -> Path:
    return path / json.loads((path / "CURRENT").read_text())["snapshot"]


def reseal(path: Path, key: bytes | None) -> None:
    """Recompute every checksum an attacker without the key can: the data files' SHA-256 in
    the manifest and the manifest's SHA-256 in CURRENT (an HMAC needs the key: not redone)."""
    snap = snap_dir(path)
    mf = snap / "manifest.json"
    try:
        m = json.loads(mf.read_text())
        for name in m["files"]:
            m["files"][name] = hashlib.sha256((snap / name).read_bytes()).hexdigest()
        mf.write_text(json.dumps(m, indent=1))
    except (ValueError, KeyError, TypeError, OSError, AttributeError):
        pass
    seal = json.loads((path / "CURRENT").read_text())
    seal["manifest_sha256"] = hashlib.sha256(mf.read_bytes()).hexdigest()
    (path / "CURRENT").write_text(json.dumps(seal))


def make_seeds(root: Path, key: bytes | None) -> list[Path]:
    import numpy as np

    import chrono_engine as ce
    seeds = []
    for i, metric in enumerate(("cosine", "ip", "l2")):
        rng = np.random.default_rng(i)
        n = 40 + 20 * i
        path = root / f"seed-{metric}"
        eng = ce.Engine.create(path, 8, metric=metric, threads=1, M=4 + 2 * i, key=key,
                               decay=ce.DecayPolicy({"news": ce.Exponential(half_life=30.0)},
                                                    default=ce.HalfLife(365.0)))
        eng.partition_min = 16  # a probe partition in the snapshot (partition.arrow, centroids.arrow); l2: none
        eng.ingest({"vector": rng.normal(size=(n, 8)).astype(np.float32),
                    "valid_from": np.datetime64("2024-01-01", "us") + np.arange(n).astype("timedelta64[D]"),
                    "stem_id": [f"s{j % 7}" if j % 3 else None for j in range(n)],
                    "version": [f"v{j}" for j in range(n)], "fact_type": ["news", "x"] * (n // 2),
                    "title": [f"t{j}" for j in range(n)],
                    # user metadata of every kind (metadata.arrow, and the log's batches)
                    "tenant": [f"t{j % 3}" if j % 5 else None for j in range(n)],
                    "level": np.arange(n, dtype=np.int64), "score_f": np.linspace(0, 1, n),
                    "flag": [bool(j % 2) for j in range(n)],
                    "acl": [["hr", "all"][: j % 3] for j in range(n)],
                    "when": np.datetime64("2023-01-01", "us") + np.arange(n).astype("timedelta64[h]")})
        eng.retract([1, 2], at="2030-01-01")
        eng.supersede("s2", {"vector": np.ones((1, 8), np.float32)}, "2025-06-01", version="v998")
        eng.deprecate([4], effective_at="2024-03-01")  # lifecycle events in the snapshot (amend.arrow)
        eng.save()
        eng.ingest({"vector": rng.normal(size=(5, 8)).astype(np.float32), "valid_from": ["2025-01-01"] * 5,
                    "tenant": ["t9"] * 5, "later": [1.5] * 5})
        eng.supersede("s1", {"vector": np.ones((1, 8), np.float32)}, "2026-01-01", version="v999")
        eng.close()
        seeds.append(path)
    return seeds


def _graph_header_fields() -> list[tuple[int, str]]:
    # hnswlib 0.8 saveIndex: offsetLevel0 (size_t), max_elements, cur_element_count,
    # size_data_per_element, label_offset, offsetData (size_t each), maxlevel (int),
    # enterpoint_node (uint32), maxM, maxM0, M (size_t each), mult (double), ef_construction
    fields, at = [], 0
    for name, fmt in (("offsetLevel0", "Q"), ("max_elements", "Q"), ("cur_element_count", "Q"),
                      ("size_data_per_element", "Q"), ("label_offset", "Q"), ("offsetData", "Q"),
                      ("maxlevel", "i"), ("enterpoint_node", "I"), ("maxM", "Q"), ("maxM0", "Q"), ("M", "Q"),
                      ("mult", "d"), ("ef_construction", "Q")):
        fields.append((at, fmt))
        at += struct.calcsize(fmt)
    return fields


EXTREMES = [0, 1, 2, 3, 7, 8, 255, 1023, 1024, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1]


def mutate(path: Path, rng: random.Random, key: bytes | None) -> tuple[str, bool, str]:
    """Damage the store at ``path``; returns (family, resealed, the file damaged)."""
    snap = snap_dir(path)
    family = rng.choice(["flip", "flip", "truncate", "extend", "graph-header", "graph-body", "meta", "manifest",
                         "log"])
    files = {n: (path / n if n == "CURRENT" else snap / n) for n in FILES}
    if family in ("flip", "truncate", "extend"):
        which = rng.choice(FILES)
        f = files[which]
        b = bytearray(f.read_bytes())
        if family == "flip" and b:
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] ^= rng.randint(1, 255)
        elif family == "truncate":
            b = b[:rng.randrange(len(b) + 1)]
        else:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        f.write_bytes(bytes(b))
        return family, False, which
    if family == "graph-header":
        g = files["graph.bin"]
        b = bytearray(g.read_bytes())
        at, fmt = rng.choice(_graph_header_fields())
        if fmt == "d":
            v = rng.choice([0.0, -1.0, float("inf"), float("nan"), 1e300])
        else:
            v = rng.choice(EXTREMES) % (2 ** (8 * struct.calcsize(fmt)))
            if fmt == "i":
                v = struct.unpack("<i", struct.pack("<I", v % 2**32))[0]
        b[at:at + struct.calcsize(fmt)] = struct.pack("<" + fmt, v)
        g.write_bytes(bytes(b))
    elif family == "graph-body":
        g = files["graph.bin"]
        b = bytearray(g.read_bytes())
        head = 8 * 6 + 4 + 4 + 8 * 3 + 8 + 8
        if len(b) > head + 4:
            pos = rng.randrange(head, len(b) - 4)
            pos -= (pos - head) % 4  # aligned: a count, an id, a label half or a float
            b[pos:pos + 4] = struct.pack("<I", rng.choice(EXTREMES) % 2**32)
        g.write_bytes(bytes(b))
    elif family == "meta":
        import numpy as np
        import pyarrow as pa
        import pyarrow.ipc as ipc
        which = rng.choice(["meta.arrow", "meta.arrow", "amend.arrow", "metadata.arrow"])
        f = files[which]
        t = ipc.open_file(pa.BufferReader(f.read_bytes())).read_all()
        name = rng.choice(t.column_names)
        col = t.column(name).combine_chunks()
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        i = rng.randrange(len(t))
        vals = col.to_pylist()
        typ = col.type
        if pa.types.is_list(typ):
            vals[i] = rng.choice([None, [], ["zzz", None], ["x"] * 50, vals[(i + 1) % len(vals)]])
        elif pa.types.is_timestamp(typ):
            typ = pa.int64()  # the stored µs, written back as plain integers: a kind the manifest does not name
            vals = [None if v is None else int(pa.scalar(v, col.type).cast(pa.int64()).as_py()) for v in vals]
            vals[i] = rng.choice([None, -2**63, 2**63 - 1, 0])
        elif pa.types.is_null(typ):
            vals[i] = None
        elif pa.types.is_string(typ):
            vals[i] = rng.choice([None, "", "zzz", vals[(i + 1) % len(vals)], "\u00e9" * 3])
        elif pa.types.is_boolean(typ):
            vals[i] = rng.choice([None, not vals[i]])
        elif pa.types.is_floating(typ):
            vals[i] = rng.choice([None, 7.5, float("nan"), -1.0, 0.0, 1e-30, float("inf")])
        else:
            info = np.iinfo(typ.to_pandas_dtype())
            vals[i] = rng.choice([None, int(info.min), int(info.max), 0, -1 if info.min < 0 else 1,
                                  vals[(i + 1) % len(vals)], vals[i] + 1 if vals[i] is not None and vals[i] < info.max else 0])
        t = t.set_column(t.column_names.index(name), name, pa.array(vals, typ))
        with pa.OSFile(str(f), "wb") as sink, ipc.new_file(sink, t.schema) as w:
            w.write_table(t)
    elif family == "manifest":
        mf = files["manifest.json"]
        m = json.loads(mf.read_text())
        field = rng.choice(sorted(m))
        m[field] = rng.choice([None, 0, -1, 1, 2**64, 1e308, "x", [], {}, [m[field]], True,
                               {"M": 2**40, "ef_construction": 1, "seed": 0}])
        mf.write_text(json.dumps(m))
    else:  # log: change a byte of a record and recompute its digest (needs no key without one)
        import chrono_engine._wal as wal
        f = files["log.wal"]
        b = bytearray(f.read_bytes())
        name = snap.name
        head = wal._HEAD[wal.VERSION]
        at, recs = wal.records_start(name), []
        while at + head <= len(b):
            _, _, n = wal._REC_HEAD.unpack_from(b, at)
            end = at + head + n + wal._DIGEST
            if end > len(b):
                break
            recs.append((at, end))
            at = end
        if recs:
            s, e = rng.choice(recs)
            pos = rng.randrange(s + head, e - wal._DIGEST)
            b[pos] ^= rng.randint(1, 255)
            if key is None:
                b[e - wal._DIGEST:e] = wal._digest(None, bytes(b[s:e - wal._DIGEST]))
        f.write_bytes(bytes(b))
        return family, key is None, "log.wal"
    reseal(path, key)
    if family == "meta":
        return family, True, which
    return family, True, {"graph-header": "graph.bin", "graph-body": "graph.bin", "manifest": "manifest.json"}[family]


_WORKER = r"""
import json, sys
import numpy as np
import chrono_engine as ce
from chrono_engine.errors import ChronoError
key = sys.argv[1].encode() if sys.argv[1] else None
for line in sys.stdin:
    path = line.strip()
    try:
        e = ce.Engine.open(path, read_only=True, threads=1, key=key)
        c = e.columns()
        hits = e.search_batch(np.ones((2, e.dim), np.float32), 5, mode="all", exact=True)
        if "tenant" in e.metadata:  # the metadata columns' filters over what opened
            e.search_batch(np.ones((2, e.dim), np.float32), 5, mode="all", exact=True,
                           where={"$or": [{"tenant": "t1"}, {"acl": {"$in": ["hr"]}}]})
        digest = {k: v.tobytes().hex()[:0] + str(hash(v.tobytes())) for k, v in c.items()}
        digest["vectors"] = str(hash(e.vectors().tobytes()))
        digest["strings"] = str(hash(str(e.get(c["id"]).to_pylist()) if len(e) else ""))
        out = {"result": "opened", "digest": digest, "rows": len(e), "hits": hits.num_rows}
    except ChronoError as err:
        out = {"result": "refused", "error": type(err).__name__, "message": str(err)[-200:]}
    except Exception as err:
        out = {"result": "escaped", "error": type(err).__name__, "message": str(err)[-200:]}
    print(json.dumps(out), flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stores", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--key", action="store_true", help="seal the seed stores with a key (and open with it)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one open may take")
    ap.add_argument("--keep", action="store_true", help="keep the stores that crashed or opened wrongly")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    key = KEY if args.key else None
    tmp = Path(tempfile.mkdtemp(prefix="chrono-mutate-"))
    seeds = make_seeds(tmp, key)
    env = dict(os.environ, PYTHONHASHSEED="0")
    worker = None

    def start():
        return subprocess.Popen([sys.executable, "-c", _WORKER, key.decode() if key else ""], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp))

    def ask(path: Path):
        nonlocal worker
        if worker is None or worker.poll() is not None:
            worker = start()
        worker.stdin.write(str(path) + "\n")
        worker.stdin.flush()
        line = worker.stdout.readline()
        if not line:
            rc = worker.wait()
            err = worker.stderr.read()[-400:]
            worker = None
            return {"result": "crashed", "error": f"exit {rc}", "message": err}
        return json.loads(line)

    baseline = {s: ask(s) for s in seeds}
    for s, r in baseline.items():
        if r["result"] != "opened":
            print(f"seed store {s} does not open: {r}")
            return 1
    counts: dict = {}
    bad = []
    t0 = time.time()
    for i in range(args.stores):
        seed = rng.choice(seeds)
        path = tmp / "m"
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(seed, path)
        family, resealed, which = mutate(path, rng, key)
        r = ask(path)
        if r["result"] == "opened":
            same = r["digest"] == baseline[seed]["digest"]
            kind = "opened-same" if same else ("valid-resealed" if resealed else "WRONG")
            if kind == "WRONG" and which == "log.wal" and r["rows"] <= baseline[seed]["rows"]:
                # the end of the log cut or damaged: read as a torn last write, dropped by design
                kind = "log-tail-dropped"
        else:
            kind = r["result"] if r["result"] != "refused" else "refused"
        if kind in ("WRONG", "crashed", "escaped"):
            bad.append((i, family, kind, r.get("error"), r.get("message", "")[:200]))
            if args.keep:
                shutil.copytree(path, tmp / f"bad-{i}")
        counts.setdefault(family, {}).setdefault(kind, 0)
        counts[family][kind] += 1
    if worker is not None:
        worker.stdin.close()
        worker.wait()
    for b in bad[:20]:
        print("BAD", b)
    total = {k: sum(c.get(k, 0) for c in counts.values()) for k in
             ("refused", "opened-same", "valid-resealed", "log-tail-dropped", "WRONG", "crashed", "escaped")}
    print(json.dumps(counts, indent=1))
    print(f"mutated stores: {args.stores} ({'keyed' if key else 'no key'}), {total}, {time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
