"""``chrono retract``: withdraw items by id (they stay in history)."""
from __future__ import annotations

import json

from ._common import EXIT_OK, int_in, open_store


def add_parser(sub) -> None:
    """The ``retract`` command and its arguments."""
    p = sub.add_parser("retract", help="retract items by id (kept in history, invisible after --at)")
    p.add_argument("store")
    p.add_argument("ids", nargs="+", type=int_in(0, 2**64 - 1, " (an item id)"))
    p.add_argument("--at", metavar="T", help="transaction time of the retraction (default: now)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args) -> int:
    """Retract the items and print their ids."""
    eng = open_store(args.store, write=True)
    kw = {} if args.at is None else {"at": args.at}
    done = [int(i) for i in eng.retract(args.ids, **kw)]
    eng.close()
    print(json.dumps({"retracted": done}) if args.json else f"retracted {done}")
    return EXIT_OK
