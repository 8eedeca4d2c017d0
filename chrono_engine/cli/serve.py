"""``chrono serve``: a store over HTTP (:mod:`chrono_engine.serve`)."""
from __future__ import annotations

import argparse

from ._common import EXIT_OK, EXIT_REFUSED, CliError, int_in, text_arg


def _seconds_in(lo: float, hi: float):
    """An argparse type: seconds, a number in (lo, hi], else a usage error saying the range."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
        if not lo < v <= hi:  # NaN too
            raise argparse.ArgumentTypeError(f"must be more than {lo:g} and at most {hi:g} seconds, got {text}")
        return v
    return parse


def add_parser(sub) -> None:
    """The ``serve`` command and its arguments."""
    p = sub.add_parser("serve", help="serve STORE over HTTP (loopback by default; API keys from "
                                     "CHRONO_API_KEYS / CHRONO_READ_KEYS or --keys-file)")
    p.add_argument("store")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int_in(0, 65535, " (a port)"), default=8000)
    p.add_argument("--name", type=text_arg, help="the collection's name (default: the store folder's name)")
    p.add_argument("--keys-file", metavar="FILE",
                   help="lines 'admin KEY' / 'read KEY', each optionally followed by a filter as JSON "
                        "('read KEY {\"tenant\": \"acme\"}': a key scoped to those rows; docs/serve.md)")
    p.add_argument("--no-auth", action="store_true", help="no keys (loopback addresses only)")
    p.add_argument("--threads", type=int_in(1, 1024, ""), help="the engine's worker threads (default: all cores)")
    p.add_argument("--max-body", type=int_in(1, 2**40, " (bytes)"), default=16 * 2**20)
    p.add_argument("--max-batch", type=int_in(1, 2**20, ""), default=1024)
    p.add_argument("--max-rows", type=int_in(1, 2**30, ""), default=100_000)
    p.add_argument("--max-k", type=int_in(1, 10_000, ""), default=1000)
    p.add_argument("--max-fact-types", type=int_in(1, 2**20, ""), default=1024, help="fact types a search names")
    p.add_argument("--max-text", type=int_in(1, 2**24, " (characters)"), default=10_000,
                   help="characters of a /query text")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds a read may take (504 after)")
    p.add_argument("--snapshots", metavar="DIR", help="where named snapshots go (default: STORE.snapshots beside it)")
    p.add_argument("--read-only", action="store_true",
                   help="a read replica: no writer lock (serve beside the store's writer), writes answer 403")
    p.add_argument("--refresh", type=_seconds_in(0.0, 86400.0), metavar="SECONDS",
                   help="with --read-only: open the store again when it has changed, checked this often")
    p.add_argument("--workers", type=int_in(1, 256, ""), default=1,
                   help="with --read-only: worker processes on one port, each its own engine and event loop "
                        "(--threads each; default: the cores shared out)")
    p.set_defaults(run=run)


def run(args) -> int:
    """Serve the store until the process is stopped."""
    try:
        from ..serve import Limits, serve
    except ImportError as e:
        raise CliError(f"the service needs its extra: pip install 'chrono_engine[serve]' ({e})", EXIT_REFUSED) from None
    limits = Limits(max_body=args.max_body, max_batch=args.max_batch, max_rows=args.max_rows, max_k=args.max_k,
                    timeout=args.timeout, max_fact_types=args.max_fact_types, max_text=args.max_text)
    try:
        serve(args.store, host=args.host, port=args.port, name=args.name, keys_file=args.keys_file,
              allow_anonymous=args.no_auth, limits=limits, threads=args.threads, snapshots=args.snapshots,
              read_only=args.read_only, refresh=args.refresh, workers=args.workers)
    except ImportError as e:
        raise CliError(f"the service needs its extra: pip install 'chrono_engine[serve]' ({e})", EXIT_REFUSED) from None
    return EXIT_OK
