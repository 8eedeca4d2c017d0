#!/usr/bin/env python3
"""Crash test of the write-ahead log: ``kill -9`` a writer at random moments and check that
the reopened store holds every acknowledged write and no half-applied one.

A child process opens the store (fsync policy "call" by default), then loops over random
writes — ingest, supersede, retract, an occasional checkpoint — printing ``BEGIN <op>``
before each call and ``ACK <op>`` after it returns. The parent kills it with SIGKILL after
a random delay, reopens the store read-only and checks:

- every ACKed ingest's ids are present with their valid_from; every ACKed supersede's new
  ids are present and each earlier version of the stem is closed at its effective time;
  every ACKed retract's ids are retracted;
- the one write in flight (BEGIN without ACK) is applied completely or not at all;
- the store opens at all (no CorruptStoreError), with no other rows than the ones written.

Then a new child continues on the same store. Usage::

    python scripts/crash_test.py --kills 200            # the issue's figure
    python scripts/crash_test.py --kills 5 --seed 1     # the short pass CI runs

Exit status 0 when every check passed; the summary line says how many writes were checked.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIM = 16


def child(store: str, seed: int, fsync: str) -> None:
    import numpy as np

    import chrono_engine as ce
    rng = random.Random(seed)
    eng = ce.Engine.open(store, fsync=fsync, threads=1)
    cols = eng.columns()
    next_id = int(cols["id"].max()) + 1 if len(eng) else 1
    stems = {}  # stem -> (last version number, last effective day)
    for s in eng.stems:
        h = eng.history(s)
        stems[s] = (len(h), int(h.column("valid_from").cast("int64").to_numpy().max() // 86_400_000_000))
    live = [int(i) for i, r in zip(cols["id"], cols["retracted_at"]) if r == np.iinfo(np.int64).max]
    print("READY", flush=True)

    def say(tag: str, op: dict) -> None:
        sys.stdout.write(f"{tag} {json.dumps(op)}\n")
        sys.stdout.flush()

    base = 19_000  # days since the epoch
    while True:
        r = rng.random()
        if r < 0.5 or not live:
            n = rng.randint(1, 40)
            ids = list(range(next_id, next_id + n))
            next_id += n
            day = base + rng.randint(0, 500)
            stem = f"doc{rng.randint(0, 10**9)}" if rng.random() < 0.3 else None
            op = {"op": "ingest", "ids": ids, "day": day, "stem": stem}
            vec = np.asarray([[rng.gauss(0, 1) for _ in range(DIM)] for _ in range(n)], np.float32)
            rows = {"id": np.asarray(ids, np.uint64), "vector": vec,
                    "valid_from": np.full(n, day * 86_400_000_000, np.int64).astype("datetime64[us]")}
            if stem:
                rows["stem_id"] = [stem] * n
                rows["version"] = ["v1"] * n
            say("BEGIN", op)
            eng.ingest(rows)
            live += ids
            if stem:
                stems[stem] = (1, day)
        elif r < 0.75 and stems:
            stem = rng.choice(sorted(stems))
            ver, day = stems[stem]
            eff = day + rng.randint(1, 30)
            n = rng.randint(1, 3)
            ids = list(range(next_id, next_id + n))
            next_id += n
            op = {"op": "supersede", "stem": stem, "version": f"v{ver + 1}", "ids": ids, "day": eff}
            say("BEGIN", op)
            eng.supersede(stem, {"id": np.asarray(ids, np.uint64), "vector": np.ones((n, DIM), np.float32)},
                          np.datetime64(eff, "D"), version=f"v{ver + 1}")
            stems[stem] = (ver + 1, eff)
            live += ids
        elif r < 0.95:
            pick = rng.sample(live, min(len(live), rng.randint(1, 5)))
            op = {"op": "retract", "ids": pick}
            say("BEGIN", op)
            eng.retract(pick)
            live = [i for i in live if i not in set(pick)]
        else:
            op = {"op": "checkpoint"}
            say("BEGIN", op)
            eng.save()
        say("ACK", op)


def check(store: str, acked: list, inflight: dict | None, written: set) -> tuple[int, list]:
    import numpy as np

    import chrono_engine as ce
    problems = []
    eng = ce.Engine.open(store, read_only=True, threads=1)
    cols = eng.columns()
    row_of = {int(i): k for k, i in enumerate(cols["id"])}
    OPEN = np.iinfo(np.int64).max

    def applied(op: dict) -> bool | None:
        """True: fully there; False: not at all; None: partly (a failure)."""
        if op["op"] == "checkpoint":
            return True
        have = [i in row_of for i in op["ids"]]
        if op["op"] == "retract":
            done = [cols["retracted_at"][row_of[i]] != OPEN for i in op["ids"] if i in row_of]
            return True if all(done) else False if not any(done) else None
        if op["op"] == "ingest":
            if all(have):
                ok = all(cols["valid_from"][row_of[i]] == op["day"] * 86_400_000_000 for i in op["ids"])
                return True if ok else None
            return False if not any(have) else None
        # supersede: new rows and the closing of every earlier version, or neither
        h = eng.history(op["stem"])
        vf = h.column("valid_from").cast("int64").to_numpy()
        vt = h.column("valid_to").cast("int64").fill_null(OPEN).to_numpy()
        earlier = np.asarray([v != op["version"] for v in h.column("version").to_pylist()])
        eff = op["day"] * 86_400_000_000
        closed = (vt[earlier & (vf < eff)] <= eff).all()
        if all(have) and closed:
            return True
        if not any(have):
            return False if not (earlier & (vt == eff)).any() else None
        return None

    for op in acked:
        if applied(op) is not True:
            problems.append(f"acknowledged {op} is missing or partial")
    if inflight is not None and applied(inflight) is None:
        problems.append(f"in-flight {inflight} is half-applied")
    extra = set(row_of) - written
    if extra:
        problems.append(f"{len(extra)} rows nobody wrote, e.g. {sorted(extra)[:3]}")
    return len(acked), problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fsync", default="call", choices=["call", "interval", "off"])
    ap.add_argument("--max-delay", type=float, default=0.6, help="seconds of writing before each kill, at most")
    ap.add_argument("--child", nargs=2, metavar=("STORE", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.fsync)
        return 0
    import chrono_engine as ce
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="chrono-crash-")
    store = str(Path(tmp) / "store")
    ce.Engine.create(store, DIM, threads=1).close()
    acked: list = []
    written: set = set()
    failures = 0
    t0 = time.time()
    for k in range(args.kills):
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--fsync", args.fsync, "--child", store,
                                 str(rng.randrange(2**31))], stdout=subprocess.PIPE, text=True,
                                cwd=tmp)
        line = proc.stdout.readline()
        if not line.startswith("READY"):
            proc.kill()
            print(f"kill {k}: the child did not start: {line!r} {proc.communicate()}")
            return 1
        time.sleep(rng.random() * args.max_delay)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        inflight = None
        for ln in out.splitlines():
            tag, _, body = ln.partition(" ")
            if tag == "BEGIN":
                inflight = json.loads(body)
                written.update(inflight.get("ids", []) if inflight["op"] != "retract" else [])
            elif tag == "ACK":
                acked.append(json.loads(body))
                inflight = None
        n, problems = check(store, acked, inflight, written)
        if problems:
            failures += 1
            print(f"kill {k}: " + "; ".join(problems[:3]))
    print(f"crash test: {args.kills} kills (fsync={args.fsync}), {len(acked)} acknowledged writes checked after "
          f"each, {failures} kills with a problem, {time.time() - t0:.0f} s; store in {store}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
