"""Layer 1 throughput: the temporal encoder through ONNX Runtime vs its NumPy reference,
and the offline text encoder (all-MiniLM-L6-v2 int8) at batch 1 and batch 32.

One thread each (``--threads``), best of ``--repeat`` runs, all measured in this run:

    python benches/bench_embed.py --json bench_out/embed.json

The temporal encoder is timed on 1M random timestamps (1900–2100) at t = 32 (16 periods,
1 hour to 400 years) and also checked against the reference (max |ONNX − NumPy|). The text
encoder needs the ``[text]`` extra; it is reported as missing otherwise.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="timestamps per timed call")
    ap.add_argument("--dim", type=int, default=32, help="temporal block width t")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=256, help="texts per text-encoder measurement")
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args(argv)

    import onnxruntime

    from chrono_engine.embed import TemporalEncoder

    out = {"machine": platform.processor() or platform.machine(), "python": sys.version.split()[0],
           "onnxruntime": onnxruntime.__version__, "threads": a.threads}
    enc = TemporalEncoder(dim=a.dim, threads=a.threads)
    rng = np.random.default_rng(0)
    lo, hi = (int(np.datetime64(x, "us").astype(np.int64)) for x in ("1900-01-01", "2100-01-01"))
    t = rng.integers(lo, hi, a.n)
    err = float(np.abs(enc.encode(t[:100_000]) - enc.reference(t[:100_000])).max())
    s_ort = best_of(lambda: enc.encode(t), a.repeat)
    s_np = best_of(lambda: enc.reference(t), a.repeat)
    small = t[:1]
    s_one = best_of(lambda: [enc.encode(small) for _ in range(1000)], a.repeat) / 1000
    out["temporal"] = {"dim": a.dim, "n": a.n, "onnx_per_s": a.n / s_ort, "numpy_per_s": a.n / s_np,
                       "ratio_vs_numpy": s_np / s_ort, "max_abs_diff": err, "single_call_us": s_one * 1e6,
                       "providers": enc.providers}
    print(f"temporal encoder t={a.dim}, {a.n:,} timestamps, {a.threads} thread(s), best of {a.repeat}:")
    print(f"  ONNX Runtime {a.n / s_ort / 1e6:6.2f} M/s   NumPy reference {a.n / s_np / 1e6:6.2f} M/s   "
          f"ratio {s_np / s_ort:.2f}x   max |diff| {err:.1e}   one timestamp per call {s_one * 1e6:.1f} us")

    try:
        from chrono_engine.embed import TextEncoder
        text = TextEncoder(threads=a.threads, batch_size=32)
    except Exception as e:  # the [text] extra is optional
        out["text"] = {"missing": f"{type(e).__name__}: {e}"}
        print(f"text encoder: not measured ({type(e).__name__}: {e})")
    else:
        words = ("the policy on director hotel caps was revised after the audit in the third quarter "
                 "ministers met to discuss oil exports and sanctions before the election").split()
        texts = [" ".join(rng.choice(words, rng.integers(6, 20))) for _ in range(a.sentences)]
        text.encode(texts[:32])  # warm up
        s1 = best_of(lambda: [text.encode([x]) for x in texts[:64]], max(1, a.repeat // 2)) / 64
        s32 = best_of(lambda: text.encode(texts), max(1, a.repeat // 2)) / len(texts)
        out["text"] = {"model": text.model_path, "batch1_per_s": 1 / s1, "batch32_per_s": 1 / s32,
                       "mean_words": float(np.mean([len(x.split()) for x in texts]))}
        print(f"text encoder (all-MiniLM-L6-v2 int8), {a.threads} thread(s): batch 1 {1 / s1:7.1f} sentences/s   "
              f"batch 32 {1 / s32:7.1f} sentences/s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
