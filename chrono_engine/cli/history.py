"""``chrono history``: every version of a lineage, oldest first."""
from __future__ import annotations

from ._common import EXIT_OK, open_store, print_table, text_arg


def add_parser(sub) -> None:
    """The ``history`` command and its arguments."""
    p = sub.add_parser("history", help="every version of lineage STEM, oldest first")
    p.add_argument("store")
    p.add_argument("stem", type=text_arg)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args) -> int:
    """Print the lineage's versions."""
    eng = open_store(args.store)
    print_table(eng.history(args.stem), args.json,
                 ["id", "version", "valid_from", "valid_to", "ingested_at", "retracted_at", "deprecated", "title"])
    return EXIT_OK
