"""``chrono search``: fused temporal top-k for query vectors, with one flag per
:class:`~chrono_engine.SearchOptions` field."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .._args import K_MAX
from ._common import EXIT_FILE, EXIT_OK, EXIT_USAGE, CliError, int_in, open_store, print_table


# One flag per SearchOptions field (tests/test_cli.py checks that none is missing):
# name -> (argparse keywords, help). Flags left unset keep SearchOptions' defaults.
SEARCH_FLAGS = {
    "mode": (dict(choices=["latest", "as_of", "window", "all"]), "search mode (default latest)"),
    "as_of": (dict(metavar="T"), "valid time T (ISO-8601; naive = UTC)"),
    "known_at": (dict(metavar="T"), "transaction time: what the store knew then (default now)"),
    "window": (dict(nargs=2, metavar=("START", "END")),
               "window mode's interval [START, END); 'open' for an open end (START: the beginning of time)"),
    "fact_types": (dict(nargs="+", metavar="TYPE"), "search only these fact types"),
    "tau": (dict(type=float), "τ: items with validity below it never qualify (default 0)"),
    "deprecated": (dict(choices=["penalize", "exclude", "include"]),
                   "latest mode: items no longer in force are penalised (default), excluded or included"),
    "future": (dict(choices=["penalize", "exclude", "include"]),
               "latest mode: items not yet valid are excluded (default), penalised or included"),
    "deprecation_penalty": (dict(type=float), "the penalty factor (default 0.1)"),
    "arbitrate": (dict(action=argparse.BooleanOptionalAction), "one version per stem (default on)"),
    "fusion": (dict(choices=["product", "linear"]), "similarity × validity (default) or α·s + (1−α)·V"),
    "alpha": (dict(type=float), "α of linear fusion (default 0.75)"),
    "exact": (dict(action=argparse.BooleanOptionalAction), "force a certified exact answer"),
    "explain": (dict(action=argparse.BooleanOptionalAction), "add decay, penalty, plan and reason columns"),
    "lang": (dict(choices=["en", "zh"]), "citation language (default en)"),
    "verify": (dict(type=float, metavar="GAMMA"), "the layer-3 gate: robustness, satisfied, refetch"),
    "where": (dict(metavar="JSON"), 'a metadata filter, e.g. \'{"tenant": "acme", "acl": {"$in": ["hr"]}}\''),
    "columns": (dict(nargs="*", metavar="NAME"), "metadata columns to show (default: all; none: no column)"),
}


SHOW = ["id", "score", "stem_id", "version", "title", "valid_from", "valid_to", "validity", "certified"]
# columns --explain and --verify add
_EXPLAIN_AND_GATE = ["decay", "penalty", "plan", "reason", "robustness", "satisfied", "refetch"]


def add_parser(sub) -> None:
    """The ``search`` command and its arguments."""
    p = sub.add_parser("search", help="fused temporal top-k for query vectors")
    p.add_argument("store")
    p.add_argument("--vector", help="one query vector as a JSON list")
    p.add_argument("--vectors", metavar="FILE", help="query vectors (.npy, or text: one per line)")
    p.add_argument("-k", type=int_in(1, K_MAX), default=10, help="results per query (default 10)")
    p.add_argument("--json", action="store_true", help="JSON output")
    _add_search_flags(p)
    p.set_defaults(run=run)


def _add_search_flags(p) -> None:
    for name, (kw, help_) in SEARCH_FLAGS.items():
        p.add_argument("--" + name.replace("_", "-"), dest=name, default=None, help=help_, **kw)


def _search_options(args):
    """The search options of ``chrono search``'s flags."""
    from ..search import SearchOptions
    given = {name: getattr(args, name) for name in SEARCH_FLAGS if getattr(args, name) is not None}
    if "window" in given:  # 'open': an open end, as None in the Python API
        given["window"] = tuple(None if w == "open" else w for w in given["window"])
    if "where" in given:
        given["where"] = _json(given["where"], "--where")
    return SearchOptions(**given)


def _json(text: str, what: str):
    """JSON text, or a CliError (usage) for text that is not JSON or nests too deeply."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise CliError(f"{what}: not JSON ({str(e)[:80]})", EXIT_USAGE) from None
    except RecursionError:
        raise CliError(f"{what}: JSON nested too deeply", EXIT_USAGE) from None


def _vectors(args):
    import numpy as np
    if args.vector is not None:
        try:
            v = np.asarray(_json(args.vector, "--vector"), dtype=np.float32)
        except (ValueError, TypeError, OverflowError):
            raise CliError(f"--vector must be a JSON list of numbers, got {args.vector[:80]!r}", EXIT_USAGE) from None
        if v.ndim != 1 or not v.size:
            raise CliError(f"--vector must be a non-empty JSON list of numbers, got {args.vector[:80]!r}", EXIT_USAGE)
        return v.reshape(1, -1)
    if args.vectors is not None:
        p = Path(args.vectors)
        if not p.exists():
            raise CliError(f"{args.vectors}: no such file", EXIT_FILE)
        try:
            v = np.load(p) if p.suffix == ".npy" else np.loadtxt(p, dtype=np.float32, ndmin=2)
        except (ValueError, OSError, EOFError) as e:
            raise CliError(f"{args.vectors}: cannot read vectors ({str(e).splitlines()[0] if str(e) else e!r})",
                           EXIT_FILE) from None
        if v.dtype.kind not in "fiu" or v.ndim not in (1, 2) or not v.size:
            raise CliError(f"{args.vectors}: expected one query vector or a matrix of them (n, dim) of numbers, "
                           f"got shape {v.shape} of {v.dtype}")
        return np.asarray(v, dtype=np.float32).reshape(-1, v.shape[-1])
    raise CliError("give the query vector with --vector '[...]' or --vectors FILE (.npy or text)",
                   EXIT_USAGE)


def run(args) -> int:
    """Search the store for each query vector and print the hits."""
    eng = open_store(args.store)
    q = _vectors(args)
    if q.shape[-1] != eng.dim:
        raise CliError(f"the query vector has {q.shape[-1]} dimensions, the store {eng.dim}")
    opts = _search_options(args)
    res = eng.search_batch(q, args.k, opts) if q.shape[0] > 1 else eng.search(q[0], args.k, opts)
    extra = [c for c in res.column_names if c in _EXPLAIN_AND_GATE]
    meta = [c for c in res.column_names if c in eng.metadata]  # the metadata columns asked for
    print_table(res, args.json, (["query"] if q.shape[0] > 1 else []) + SHOW + meta + extra)
    if res.num_rows == 0:
        _why_empty(eng, opts)
    return EXIT_OK


def _why_empty(eng, opts) -> None:
    """A hint on stderr where no hit came back because the store knew nothing yet at
    ``--known-at`` (stdout keeps the empty answer, for --json readers)."""
    if opts.known_at is None or len(eng) == 0:
        return
    from .._time import iso, scalar_us
    first = int(eng.columns()["ingested_at"].min())
    known = scalar_us(opts.known_at, "known_at")
    if known < first:
        print(f"chrono search: no hits: --known-at {iso(known)} is before the store's first ingest "
              f"({iso(first)}); nothing was known then", file=sys.stderr)
