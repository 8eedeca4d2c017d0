"""What a run measures: :class:`Config`, and the command line that fills it
(``chrono bench``, ``python -m chrono_engine.bench``, ``benches/bench_search.py``)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from .corpus import REGIMES
from .peers import ALL_PEERS

__all__ = ["DESCRIPTION", "Config", "config_from_args", "parser"]

#: the one-line description ``--help`` prints
DESCRIPTION = "Benchmark harness: fused temporal top-k search, the engine against its peers, side by side."


@dataclass
class Config:
    """Every knob of a run; the defaults are the small built-in job (``chrono bench``)."""

    n: int = 20_000
    dim: int = 128
    queries: int = 200
    slow_queries: int = 30
    selectivity: tuple = (0.5, 0.1, 0.01)
    regimes: tuple = ("steep",)
    modes: tuple = ("as_of", "latest")
    threads: tuple = (1, 2)
    peers: tuple = ALL_PEERS
    efs: tuple = (100, 200, 400, 800)
    fusion: str | None = None     # None: the regime's
    alpha: float = 0.75
    future: str = "exclude"       # latest mode: items not yet valid (the engine's future= option)
    k: int = 10
    M: int = 16
    ef_construction: int = 200
    build_threads: int = 0        # 0: all cores
    engine_exact: bool = True
    engine_ef: int | None = None
    scan_limit: int | None = None
    engine_batch: int = 0         # queries per engine search_batch call (0: all in one call)
    min_time: float = 0.3
    min_repeat: int = 1           # every timing runs at least this often (all contenders alike)
    seed: int = 0
    order: str = "generated"      # the corpus's row order: "generated" (times spread), "time" (valid_from)
    engine_order: str = "auto"    # Engine.ingest(order=...): how the engine lays out the rows it is given
    json: str | None = "bench_out/bench_search.json"
    plot: str | None = "auto"     # "auto": beside the JSON, when matplotlib is importable
    quiet: bool = False


def _floats(s: str) -> tuple:
    return tuple(float(x) for x in s.split(",") if x.strip())


def _ints(s: str) -> tuple:
    return tuple(int(x) for x in s.split(",") if x.strip())


def _words(s: str) -> tuple:
    return tuple(x.strip() for x in s.split(",") if x.strip())


#: ``--regime`` word for every regime, in :data:`~chrono_engine.bench.corpus.REGIMES` order
BOTH = "both"


def parser(defaults: Config | None = None, prog: str = "python -m chrono_engine.bench") -> argparse.ArgumentParser:
    """The command line (``benches/bench_search.py`` reuses it with larger defaults; ``chrono
    bench`` passes its own ``prog``, the name ``--help`` shows)."""
    d = defaults or Config()
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=d.n, help="items in the synthetic corpus")
    p.add_argument("--dim", type=int, default=d.dim, help="vector dimension")
    p.add_argument("--queries", type=int, default=d.queries, help="queries per (mode, selectivity)")
    p.add_argument("--slow-queries", type=int, default=d.slow_queries,
                   help="queries for the slow filtered index peers: hnswlib, faiss, usearch, lancedb "
                        "(the first ones of the same set)")
    p.add_argument("--selectivity", type=_floats, default=",".join(map(str, d.selectivity)),
                   help="fractions of items valid at T")
    p.add_argument("--regime", type=_words, default=",".join(d.regimes),
                   help=f"comma-separated: steep (14 d - 10 y half-lives, product fusion), gentle (1-20 y, "
                        f"linear alpha 0.75), or {BOTH} (every regime)")
    p.add_argument("--modes", type=_words, default=",".join(d.modes), help="as_of, latest")
    p.add_argument("--threads", type=_ints, default=",".join(map(str, d.threads)), help="search thread counts")
    p.add_argument("--peers", type=_words, default=",".join(d.peers), help=", ".join(ALL_PEERS))
    p.add_argument("--ef", type=_ints, default=",".join(map(str, d.efs)),
                   help="hnswlib, faiss and usearch ef values; lancedb's over-fetch k' before the rerank")
    p.add_argument("--fusion", choices=["product", "linear"], default=d.fusion, help="override the regime's fusion")
    p.add_argument("--alpha", type=float, default=d.alpha, help="linear fusion weight")
    p.add_argument("--future", choices=["exclude", "penalize", "include"], default=d.future,
                   help="latest mode: items not yet valid are excluded (default), penalised or included")
    p.add_argument("--k", type=int, default=d.k)
    p.add_argument("--M", type=int, default=d.M)
    p.add_argument("--ef-construction", type=int, default=d.ef_construction)
    p.add_argument("--build-threads", type=int, default=d.build_threads, help="0: all cores")
    p.add_argument("--no-engine-exact", action="store_true", help="skip timing the engine with exact=True")
    p.add_argument("--engine-ef", type=int, default=d.engine_ef, help="Engine(ef=...) (default: the engine's)")
    p.add_argument("--scan-limit", type=int, default=d.scan_limit, help="Engine(scan_limit=...)")
    p.add_argument("--engine-batch", type=int, default=d.engine_batch,
                   help="queries per engine search_batch call, calls one after another (0: all in one call; "
                        "1: one query per call, the latency of a server answering queries one by one)")
    p.add_argument("--min-time", type=float, default=d.min_time, help="seconds of repeats per timing")
    p.add_argument("--min-repeat", type=int, default=d.min_repeat,
                   help="runs per timing at least (the best counts; the same for every contender)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--order", choices=["generated", "time"], default=d.order,
                   help="the corpus's row order, for every contender: as generated (the items valid at one "
                        "time spread over the corpus) or by valid_from, as a store written while time passes")
    p.add_argument("--engine-order", choices=["auto", "valid_from", "input"], default=d.engine_order,
                   help="Engine.ingest(order=...): the engine stores the rows as its default does (auto: by "
                        "valid_from, the corpus being out of order), by valid_from, or as given (the peers "
                        "read them as given either way)")
    p.add_argument("--json", default=d.json, help="where to write the JSON report ('' = nowhere)")
    p.add_argument("--plot", default=d.plot,
                   help="PNG of QPS vs recall (needs matplotlib); 'auto': beside the JSON; '' = none")
    p.add_argument("--quiet", action="store_true")
    return p


def config_from_args(ns: argparse.Namespace) -> Config:
    """The :class:`Config` of parsed arguments (``--regime both``: every regime); exits with
    a message on an unknown regime, mode or peer, or a size that is not positive."""
    def tup(v, conv):
        return conv(v) if isinstance(v, str) else tuple(v)
    cfg = Config(n=ns.n, dim=ns.dim, queries=ns.queries, slow_queries=ns.slow_queries,
                 selectivity=tup(ns.selectivity, _floats), regimes=tup(ns.regime, _words),
                 modes=tup(ns.modes, _words), threads=tup(ns.threads, _ints), peers=tup(ns.peers, _words),
                 efs=tup(ns.ef, _ints), fusion=ns.fusion, alpha=ns.alpha, future=ns.future, k=ns.k, M=ns.M,
                 ef_construction=ns.ef_construction, build_threads=ns.build_threads,
                 engine_exact=not ns.no_engine_exact, engine_ef=ns.engine_ef, scan_limit=ns.scan_limit,
                 engine_batch=ns.engine_batch,
                 min_time=ns.min_time, min_repeat=ns.min_repeat, seed=ns.seed, order=ns.order,
                 engine_order=ns.engine_order, json=ns.json or None,
                 plot=ns.plot, quiet=ns.quiet)
    if BOTH in cfg.regimes:  # every regime, each once, in their order among the words given
        cfg.regimes = tuple(dict.fromkeys(x for r in cfg.regimes for x in (REGIMES if r == BOTH else (r,))))
    for r in cfg.regimes:
        if r not in REGIMES:
            raise SystemExit(f"--regime: unknown regime {r!r} ({', '.join([*REGIMES, BOTH])})")
    for m in cfg.modes:
        if m not in ("as_of", "latest"):
            raise SystemExit(f"--modes: unknown mode {m!r} (as_of, latest)")
    for pn in cfg.peers:
        if pn not in ALL_PEERS:
            raise SystemExit(f"--peers: unknown peer {pn!r} ({', '.join(ALL_PEERS)})")
    if cfg.n <= 0 or cfg.dim <= 0 or cfg.queries <= 0 or cfg.k <= 0:
        raise SystemExit("--n, --dim, --queries and --k must be positive")
    return cfg
