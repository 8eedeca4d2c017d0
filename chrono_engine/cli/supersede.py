"""``chrono supersede``: a new version of a document lineage from a file."""
from __future__ import annotations

import json

from ._common import EXIT_OK, add_file_options, apply_map, open_store, read_table, rows_from_table, text_arg


def add_parser(sub) -> None:
    """The ``supersede`` command and its arguments."""
    p = sub.add_parser("supersede", help="add a new version of lineage STEM from FILE, effective at T")
    p.add_argument("store")
    p.add_argument("stem", type=text_arg, help="stem_id of the lineage")
    p.add_argument("file", help="the new version's rows")
    p.add_argument("--effective-at", required=True, metavar="T", help="when the new version takes effect")
    p.add_argument("--version", type=text_arg, help="version string (default: the next major)")
    add_file_options(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Add the file's rows as the lineage's new version (logged: durable without a snapshot)."""
    eng = open_store(args.store, write=True)
    table = apply_map(read_table(args.file, args.format), args.map)
    ids = eng.supersede(args.stem, rows_from_table(table), args.effective_at, version=args.version)
    eng.close()  # logged and synced: durable without a snapshot
    ids = [int(i) for i in ids]
    print(json.dumps({"stem_id": args.stem, "ids": ids}) if args.json else
          f"{args.stem}: new version with ids {ids}")
    return EXIT_OK
