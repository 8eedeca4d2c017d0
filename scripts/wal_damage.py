#!/usr/bin/env python3
"""Damage a store's write-ahead log in every way one fault can, and check that nothing
acknowledged is ever lost silently.

A store is written with ``--records`` acknowledged writes (ingests, supersedes,
retractions, deprecations, approval events; fsync policy "call") and closed. Then its log is

- cut at every byte length shorter than the log (``--cut-stride`` to sample), and
- changed by every single-bit flip (``--flip-stride`` to sample bytes; every bit of each
  byte sampled),

and each damaged log is judged: **refused** (``CorruptStoreError``), **whole** (every
acknowledged record read back, the log's end where it was), or **short** (fewer records and
no error: an acknowledged write lost silently, the failure this script exists to find).
The judge is the log reader (``chrono_engine._wal.parse``) on the damaged bytes; every
``--open-every``-th case (and every cut that is not refused) is also written to the store
and opened with ``Engine.open`` (read-only, then writable), whose rows must equal the
undamaged store's, or which must refuse with ``CorruptStoreError``. A writable open of a
refused log must leave its bytes as they were.

    python scripts/wal_damage.py                     # every cut and every bit (the full run)
    python scripts/wal_damage.py --flip-stride 7     # the short pass CI runs

Prints one JSON line of counts; exit status 1 when any case lost a write silently, opened
with other rows, or raised anything but CorruptStoreError.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 4
T0 = np.datetime64("2024-01-01T00:00:00", "us")


def write_store(root: Path, records: int, seed: int):
    """A closed store whose log holds ``records`` acknowledged writes of every kind."""
    import chrono_engine as ce
    rng = np.random.default_rng(seed)
    eng = ce.Engine.create(root, DIM, threads=1)
    day = 0

    def rows(n: int, **extra) -> dict:
        nonlocal day
        day += n
        return {"vector": rng.normal(size=(n, DIM)).astype(np.float32),
                "valid_from": T0 + np.arange(day - n, day).astype("timedelta64[D]"),
                "title": [f"r{day}-{i}" for i in range(n)], **extra}

    written = 0
    while written < records:
        kind = written % 5
        if kind == 0 or len(eng) < 4:
            eng.ingest(rows(1 + written % 3))
        elif kind == 1:
            stem = f"doc{written}"
            eng.ingest(rows(1, stem_id=[stem], version=["v1"]))
            written += 1
            if written >= records:
                break
            eng.supersede(stem, {"vector": rng.normal(size=(1, DIM)).astype(np.float32)},
                          T0 + np.timedelta64(day + 30, "D"), version="v2")
        elif kind == 2:
            eng.retract([int(eng.columns()["id"][written % len(eng)])], at="2040-01-01")
        elif kind == 3:
            eng.deprecate([int(eng.columns()["id"][(written * 7) % len(eng)])], effective_at="2024-02-01")
        else:
            stem = sorted(eng.stems)[0] if eng.stems else None
            if stem is None:
                eng.ingest(rows(1))
                written += 1
                continue
            eng.on_approval_event({"stem_id": stem, "version": f"v3.{written}.0",
                                   "effective_at": str(T0 + np.timedelta64(400 + written, "D")),
                                   "rows": [{"vector": [0.5] * DIM, "title": f"a{written}"}]})
        written += 1
    eng.close()
    return written


def contents(eng) -> tuple:
    """What a store holds, to compare an opened store with the undamaged one."""
    cols = eng.columns()
    return (len(eng), tuple(sorted(eng.stems)),
            tuple((k, cols[k].tobytes() if hasattr(cols[k], "tobytes") else tuple(map(str, cols[k])))
                  for k in sorted(cols)),
            eng.vectors().tobytes())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=24, help="acknowledged writes in the log (default 24)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cut-stride", type=int, default=1, help="cut at every n-th length (default 1: all)")
    ap.add_argument("--flip-stride", type=int, default=1, help="flip the bits of every n-th byte (default 1: all)")
    ap.add_argument("--open-every", type=int, default=499,
                    help="also open the store for every n-th case (default 499)")
    ap.add_argument("--max-seconds", type=float, default=3600.0, help="stop after this long (default 3600)")
    args = ap.parse_args(argv)
    if args.records < 1 or args.cut_stride < 1 or args.flip_stride < 1 or args.open_every < 1:
        ap.error("--records, --cut-stride, --flip-stride and --open-every must be at least 1")

    import chrono_engine as ce
    import chrono_engine._wal as wal
    from chrono_engine.errors import CorruptStoreError

    t0 = time.monotonic()
    counts = {"records": 0, "log_bytes": 0, "cuts": 0, "cuts_refused": 0, "cuts_whole": 0,
              "flips": 0, "flips_refused": 0, "flips_whole": 0, "opens": 0, "short": 0, "findings": 0,
              "stopped_early": False}
    findings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="chrono-wal-damage-") as tmp:
        root = Path(tmp) / "store"
        counts["records"] = write_store(root, args.records, args.seed)
        (snap,) = [p for p in root.iterdir() if p.name.startswith("snap-")]
        log = snap / wal.LOG_NAME
        data = log.read_bytes()
        counts["log_bytes"] = len(data)
        commits, end = wal.parse(data, snap.name, None)
        if len(commits) != counts["records"] or end != len(data):
            print(f"the undamaged log reads {len(commits)} records to byte {end} of {len(data)}", file=sys.stderr)
            return 1
        expected = contents(ce.Engine.open(root, read_only=True))

        def judge(bad: bytes, what: str, kind: str, i: int) -> None:
            try:
                got, got_end = wal.parse(bad, snap.name, None)
            except CorruptStoreError:
                counts[f"{kind}_refused"] += 1
                outcome = "refused"
            except Exception as e:  # noqa: BLE001 - anything else is a finding
                findings.append(f"{what}: {type(e).__name__}: {e}")
                return
            else:
                if len(got) == len(commits) and got_end == len(data):
                    counts[f"{kind}_whole"] += 1
                    outcome = "whole"
                else:
                    counts["short"] += 1
                    findings.append(f"{what}: {len(got)} of {len(commits)} records, no error")
                    outcome = "short"
            if outcome != "refused" and kind == "cuts" or i % args.open_every == 0:
                opened(bad, what, outcome)

        def opened(bad: bytes, what: str, outcome: str) -> None:
            counts["opens"] += 1
            for read_only in (True, False):
                log.write_bytes(bad)
                try:
                    eng = ce.Engine.open(root, read_only=read_only, threads=1)
                except CorruptStoreError:
                    if outcome != "refused":
                        findings.append(f"{what}: the reader took it, Engine.open refused it")
                    if not read_only and log.read_bytes() != bad:
                        findings.append(f"{what}: a refused writable open changed the log")
                    continue
                except Exception as e:  # noqa: BLE001
                    findings.append(f"{what}: Engine.open raised {type(e).__name__}: {e}")
                    continue
                if contents(eng) != expected:
                    findings.append(f"{what}: opened with other rows ({len(eng)} of {expected[0]})")
                if not read_only:
                    eng.close()
            log.write_bytes(data)

        for i, cut in enumerate(range(0, len(data), args.cut_stride)):
            if time.monotonic() - t0 > args.max_seconds:
                counts["stopped_early"] = True
                break
            counts["cuts"] += 1
            judge(data[:cut], f"cut at byte {cut}", "cuts", i)
        bad = bytearray(data)
        n = 0
        for at in range(0, len(data), args.flip_stride):
            if time.monotonic() - t0 > args.max_seconds:
                counts["stopped_early"] = True
                break
            for bit in range(8):
                bad[at] ^= 1 << bit
                counts["flips"] += 1
                judge(bytes(bad), f"bit {bit} of byte {at} flipped", "flips", n)
                bad[at] ^= 1 << bit
                n += 1
    counts["findings"] = len(findings)
    counts["seconds"] = round(time.monotonic() - t0, 1)
    for f in findings[:20]:
        print("FINDING", f, file=sys.stderr)
    print(json.dumps(counts))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
