"""What a run leaves behind: its progress lines, the printed table, the JSON report and
the QPS-vs-recall plot (matplotlib, imported only when a plot is asked for)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .checks import RECALL_TARGET, SCORE_TOL
from .config import Config

__all__ = ["log", "plot", "print_table", "row_line", "target_ratio", "write_json"]


def log(cfg: Config, *a) -> None:
    """Print a progress line unless ``cfg.quiet``."""
    if not cfg.quiet:
        print(*a, flush=True)


def write_json(path: str | os.PathLike, data: dict) -> Path:
    """Write ``data`` as indented JSON (NumPy scalars converted); returns the path."""
    def conv(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, Path):
            return str(o)
        raise TypeError(f"not JSON serialisable: {type(o).__name__}")
    p = Path(path)
    if p.parent != Path(""):
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=1, default=conv))
    return p


def row_line(row: dict) -> str:
    """One measured row as the progress line printed while the run goes on."""
    e = row["engine"]
    r = f"{row['ratio']:.1f}x vs {row['best_peer']}" if row["ratio"] else "no peer reached recall 0.95"
    lat = e.get("latency_ms")
    lat_s = f"; p50 {lat['p50']:.3f} p95 {lat['p95']:.3f} p99 {lat['p99']:.3f} ms" if lat else ""
    return (f"  {row['mode']:<6} sel {row['selectivity']:<5} thr {row['threads']}: engine {e['qps']:>9.0f} QPS "
            f"recall {e['recall']:.3f} certified {e['certified']:.0%}{lat_s}; {r}")


def _per_ef(rows: list, prefix: str, cfg: Config, title: str, label: str = "ef") -> None:
    """A filtered index peer's figures per ef (peer keys ``<prefix><ef>``; each cell named
    ``<label><ef>``), one line per (regime, mode, selectivity), under ``title``; nothing
    when the peer did not run."""
    keys = [f"{prefix}{ef}" for ef in cfg.efs]
    if not any(k in rows[0]["peers"] for k in keys):
        return
    print("\n" + title)
    seen = set()
    for row in rows:
        key = (row["regime"], row["mode"], row["selectivity"])
        if key in seen:
            continue
        seen.add(key)
        cells = "  ".join(f"{label}{k[len(prefix):]}: {row['peers'][k]['qps']:.0f}/{row['peers'][k]['recall']:.3f}"
                          for k in keys if k in row["peers"])
        print(f"  {row['regime']:<7}{row['mode']:<7}sel {row['selectivity']:<6} {cells}")


def print_table(report: dict, cfg: Config, nslow: int) -> None:
    """The summary table of every row, the filtered index peers' per-ef figures, the engine's
    exactness and the target line; ``nslow`` is how many queries the slow (filtered index)
    peers ran on."""
    if cfg.quiet:
        return
    rows = report["results"]
    if not rows:
        return
    hn = [f"hnswlib_ef{ef}" for ef in cfg.efs]
    print(f"\nSearch: QPS (recall@{cfg.k} vs the exact NumPy oracle); ratio = engine QPS / best peer QPS "
          f"with recall >= {RECALL_TARGET:.2f}, peers measured in this run")
    if cfg.engine_batch == 1:
        print("engine: one Engine.search call per query, one after another (latency percentiles in the progress lines)")
    elif cfg.engine_batch:
        print(f"engine: {cfg.engine_batch} queries per search_batch call, calls one after another")
    head = (f"{'regime':<7}{'mode':<7}{'sel':>6}{'thr':>4} | {'engine':>16} {'cert':>5} | "
            f"{'eng exact':>9} | {'numpy':>7} | {'np-prefilt':>10} | {'numba':>16} | "
            f"{'hnswlib+rerank':>24} | ratio")
    print(head)
    print("-" * len(head))
    for row in rows:
        e = row["engine"]
        ex = row.get("engine_exact")
        p = row["peers"]
        def one_thread(v):
            return "*" if v.get("threads") == 1 and row["threads"] > 1 else " "
        np_s = f"{p['numpy']['qps']:>7.0f}" if "numpy" in p else f"{'-':>7}"
        pf_s = (f"{p['numpy_prefilter']['qps']:>9.0f}{one_thread(p['numpy_prefilter'])}"
                if "numpy_prefilter" in p else f"{'-':>10}")
        nb_s = f"{p['numba']['qps']:>8.0f} ({p['numba']['recall']:.3f})" if "numba" in p else f"{'-':>16}"
        hs = [(k, p[k]) for k in hn if k in p]
        if hs:
            ok = [kv for kv in hs if kv[1]["recall"] >= RECALL_TARGET]  # fastest that reaches the target,
            k, v = (max(ok, key=lambda kv: kv[1]["qps"]) if ok  # else the most accurate
                    else max(hs, key=lambda kv: (kv[1]["recall"], kv[1]["qps"])))
            h_s = f"{v['qps']:>7.0f} ({v['recall']:.3f}) ef{k[10:]}{one_thread(v)}"
        else:
            h_s = "-"
        ratio = f"{row['ratio']:.1f}x {row['best_peer']}" if row["ratio"] else "n/a"
        ex_s = f"{ex['qps']:>9.0f}" if ex else f"{'-':>9}"
        print(f"{row['regime']:<7}{row['mode']:<7}{row['selectivity']:>6}{row['threads']:>4} | "
              f"{e['qps']:>8.0f} ({e['recall']:.3f}) {e['certified']:>5.0%} | {ex_s} | {np_s} | {pf_s} | {nb_s} | "
              f"{h_s:>24} | {ratio}")
    print("(recall in brackets; * = measured on one thread, the peer cannot use more; np-prefilt: as_of only;\n"
          f" hnswlib+rerank: the fastest ef reaching recall {RECALL_TARGET}, else the most accurate)")
    per_query = f"(QPS / recall@{cfg.k}); the first {nslow} queries"
    for prefix, what, label in (
            ("hnswlib_ef", f"hnswlib filtered search + NumPy rerank, per ef {per_query}, one thread (its filter "
                           f"is a Python callable)", "ef"),
            ("faiss_ef", f"FAISS IndexHNSWFlat with an IDSelectorBitmap of the eligible rows + NumPy rerank, per "
                         f"ef {per_query}, one thread", "ef"),
            ("usearch_ef", f"USearch HNSW (Python search has no predicate: over-fetch until ef eligible, "
                           f"ineligible dropped) + NumPy rerank, per ef {per_query}, one thread", "ef"),
            ("lancedb_k", f"LanceDB exact search under an SQL pre-filter on the time columns, the k' nearest, "
                          f"arbitration + NumPy rerank, per k' {per_query}, one at a time on LanceDB's thread "
                          f"pools", "k")):
        _per_ef(rows, prefix, cfg, what + ", reused for every thread row:", label=label)
    exact_rows = [r for r in rows if "engine_exact" in r]
    bad = [r for r in rows if r["engine"]["certified_but_wrong"]]
    if exact_rows:
        worst = min(r["engine_exact"]["same_topk"] for r in exact_rows)
        print(f"\nengine exact=True: identical top-{cfg.k} to the oracle (ties within {SCORE_TOL:g}) in "
              f"{worst:.1%} of queries in the worst row")
    if bad:
        print(f"WARNING: {sum(r['engine']['certified_but_wrong'] for r in bad)} certified engine answers differ "
              f"from the oracle (rows: {[(r['mode'], r['selectivity'], r['threads']) for r in bad]})")
    goal = target_ratio(cfg)
    miss = [r for r in rows if r["ratio"] is not None and (r["ratio"] < goal or not r["engine_meets_recall"])]
    print(f"target (recall >= {RECALL_TARGET} at >= {goal:g}x the best peer reaching it): met in "
          f"{len(rows) - len(miss)} of {len(rows)} rows")
    for note in report["notes"]:
        print("note:", note)


def target_ratio(cfg: Config) -> float:
    """The speed goal a run is judged by: 10x the best peer for batches (the engine's
    first goal), 5x for one ``Engine.search`` per query (``--engine-batch 1``)."""
    return 5.0 if cfg.engine_batch == 1 else 10.0


def plot(report: dict, path: str, cfg: Config, quiet_missing: bool = False) -> None:
    """QPS vs recall per selectivity (only when matplotlib is importable)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if not quiet_missing:
            log(cfg, "matplotlib is not installed: no plot")
        return
    th = min(r["threads"] for r in report["results"]) if report["results"] else 1
    rows = [r for r in report["results"] if r["threads"] == th]
    groups = list(dict.fromkeys((r["regime"], r["mode"]) for r in rows))
    sels = sorted({r["selectivity"] for r in rows}, reverse=True)
    fig, axes = plt.subplots(len(groups), len(sels), figsize=(4.2 * len(sels), 3.2 * len(groups)), squeeze=False)
    colors = {"engine": "C3", "engine exact": "C1", "numpy": "C0", "numpy_prefilter": "C4", "numba": "C2",
              "hnswlib": "C7"}
    for gi, (regime, mode) in enumerate(groups):
        for si, sel in enumerate(sels):
            ax = axes[gi][si]
            for r in [r for r in rows if r["regime"] == regime and r["mode"] == mode and r["selectivity"] == sel]:
                ax.scatter([r["engine"]["recall"]], [r["engine"]["qps"]], marker="*", s=160,
                           color=colors["engine"], label="engine", zorder=3)
                if "engine_exact" in r:
                    ax.scatter([r["engine_exact"]["recall"]], [r["engine_exact"]["qps"]], marker="x",
                               color=colors["engine exact"], label="engine exact=True", zorder=3)
                for name in ("numpy", "numpy_prefilter", "numba"):
                    if name in r["peers"]:
                        ax.scatter([r["peers"][name]["recall"]], [r["peers"][name]["qps"]],
                                   color=colors[name], label=name)
                hs = sorted((int(k[10:]), v) for k, v in r["peers"].items() if k.startswith("hnswlib_ef"))
                if hs:
                    ax.plot([v["recall"] for _, v in hs], [v["qps"] for _, v in hs], "o-", color=colors["hnswlib"],
                            label="hnswlib filter + rerank (ef)")
                    for ef, v in hs:
                        ax.annotate(str(ef), (v["recall"], v["qps"]), fontsize=6)
            ax.set_yscale("log")
            ax.set_xlabel(f"recall@{cfg.k}")
            ax.set_ylabel("QPS")
            ax.set_title(f"{regime} / {mode} / selectivity {sel}", fontsize=9)
            ax.axvline(RECALL_TARGET, color="grey", lw=0.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    fig.legend(uniq.values(), uniq.keys(), loc="lower center", ncol=len(uniq), fontsize=8)
    fig.suptitle(f"QPS vs recall, {th} thread(s), N={cfg.n}, d={cfg.dim}", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(path, dpi=120)
    log(cfg, f"plot written to {path}")

