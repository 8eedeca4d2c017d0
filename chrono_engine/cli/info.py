"""``chrono info``: build information; with a store, its statistics."""
from __future__ import annotations

import json

from ._common import EXIT_OK, open_store


def add_parser(sub) -> None:
    """The ``info`` command and its arguments."""
    p = sub.add_parser("info", help="build information; with STORE, its size, schema and memory")
    p.add_argument("store", nargs="?", help="a saved store directory")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.set_defaults(run=run)


def run(args) -> int:
    """Print the build information, or a store's size, schema and memory."""
    from .. import build_info
    info: dict = {"build": build_info()}
    if args.store:
        eng = open_store(args.store)
        info["store"] = {"path": args.store, "items": len(eng), "dim": eng.dim, "metric": eng.metric,
                         "fact_types": list(eng.fact_types), "stems": len(eng.stems),
                         "memory": eng.memory()}
    if args.json or not args.store:
        print(json.dumps(info if args.store else info["build"], indent=2, default=str))
    else:
        s = info["store"]
        print(f"{s['path']}: {s['items']} items, dim {s['dim']}, metric {s['metric']}, "
              f"{s['stems']} lineages, fact types: {', '.join(s['fact_types']) or '-'}")
        for k, v in s["memory"].items():
            print(f"  {k:<26} {v:,.1f}" if isinstance(v, float) else f"  {k:<26} {v:,}")
        print(json.dumps(info["build"]))
    return EXIT_OK
