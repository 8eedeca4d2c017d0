#!/usr/bin/env python3
"""Are two builds of the core bit-identical in what they compute?

    python scripts/compare_builds.py build/dev build/v2     # folders holding a _core*.so

Each build's compiled module is put beside a copy of this checkout's Python package in a
temporary folder and run in a subprocess of its own, computing on fixed random inputs:
the decay kernel of every family (every kernel variant the build has, on ages with edge
values), ``ce.score``, the kernels' float dot products, and the scores of exact searches.
Prints, per computation, whether the builds agree bit for bit, and the largest relative
difference where they do not; exit status 1 when any differs. (CMakeLists.txt builds
with ``-ffp-contract=off`` so that every instruction set level rounds the same operations
the same way; this script is how that is checked across levels that cannot run in one
process.)
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r'''
import json, sys
import numpy as np
import chrono_engine as ce
from chrono_engine import _core

rng = np.random.default_rng(5)
ages = np.concatenate([rng.uniform(-2_000, 20_000, 20_000), rng.lognormal(0, 6, 20_000),
                       np.array([0.0, -0.0, 1e-300, 745.0, 1e15, np.inf, -np.inf, np.nan])])
out = {"info": {k: ce.build_info()[k] for k in ("baseline", "simd", "simd_available")}}
for variant in [""] + list(ce.build_info()["simd_available"]):
    parts = []
    for code in range(6):
        for p0, p1 in ((0.01, 0.0), (0.3, 5.0), (2.0, 50.0)):
            for sym in (0.0, 1.0):
                spec = np.array([code, p0, p1 + (0.5 if code == 5 else 0.0), 24.0, sym])
                parts.append(_core.decay_eval(ages, spec, variant))
    out[f"decay[{variant or 'dispatched'}]"] = np.concatenate(parts).tolist()
    a = rng.normal(size=384).astype(np.float32)
    out[f"dot[{variant or 'dispatched'}]"] = [float(_core.dot(a, rng.normal(size=384).astype(np.float32), variant))
                                               for _ in range(200)]
n = 50_000
types = [f"t{i}" for i in range(8)]
policy = ce.DecayPolicy({t: ce.Exponential(half_life=10.0 * (i + 1)) for i, t in enumerate(types)},
                        default=ce.Weibull(shape=1.5, scale=200.0))
table = {"similarity": rng.uniform(0, 1, n), "observed_at": np.datetime64("2024-01-01", "us")
         - rng.integers(0, 10**6, n).astype("timedelta64[m]"), "reliability": rng.uniform(0.1, 1, n),
         "fact_type": rng.choice(types + ["other"], n)}
res = ce.score(table, as_of="2024-06-01", policy=ce.ScoringPolicy(decay=policy))
out["score"] = np.asarray(res.column("score")).tolist()
eng = ce.Engine(64, threads=1)
eng.ingest({"vector": rng.normal(size=(5_000, 64)).astype(np.float32),
            "valid_from": np.datetime64("2024-01-01", "us") - rng.integers(0, 2_000, 5_000).astype("timedelta64[D]")})
r = eng.search_batch(rng.normal(size=(32, 64)).astype(np.float32), 10, exact=True, as_of="2024-06-01")
out["search"] = [np.asarray(r.column(c)).tolist() for c in r.column_names if r.column(c).type in ("double", "float")]
json.dump(out, sys.stdout)
'''


def run(build: Path, tmp: Path) -> dict:
    cores = sorted(build.glob("_core*.so"))
    if len(cores) != 1:
        raise SystemExit(f"{build}: expected one _core*.so, found {len(cores)}")
    pkg = tmp / build.name.replace("/", "_") / "chrono_engine"
    shutil.copytree(ROOT / "chrono_engine", pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(cores[0], pkg / cores[0].name)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp, env={"PYTHONPATH": str(pkg.parent), "PATH": ""},
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{build}: the probe failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="chrono-builds-") as tmp:
        a, b = (run(Path(x).resolve(), Path(tmp) / str(i)) for i, x in enumerate(argv))
    print(f"A {argv[0]}: {a.pop('info')}\nB {argv[1]}: {b.pop('info')}")
    differ = 0
    for name in sorted(set(a) & set(b)):
        x, y = np.asarray(a[name], dtype=np.float64).ravel(), np.asarray(b[name], dtype=np.float64).ravel()
        same = x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
        rel = 0.0
        if not same and x.shape == y.shape:
            ok = np.isfinite(x) & np.isfinite(y) & (x != 0)
            rel = float(np.max(np.abs(x[ok] - y[ok]) / np.abs(x[ok]), initial=0.0))
        differ += not same
        print(f"{name:32s} {'identical' if same else f'DIFFERS (max relative {rel:.2g})'} ({x.size} values)")
    only = sorted(set(a) ^ set(b))
    if only:
        print("only in one build (kernel variants it lacks):", ", ".join(only))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
