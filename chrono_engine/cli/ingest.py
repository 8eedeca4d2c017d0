"""``chrono ingest``: rows of a Parquet / Arrow IPC / CSV / JSON Lines file into a store
(created when absent), every batch validated before the store changes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .._args import THREADS_MAX
from ._common import (EXIT_OK, EXIT_USAGE, CliError, add_file_options, apply_map, decay_policy, int_in, read_table,
                      rows_from_table)


def add_parser(sub) -> None:
    """The ``ingest`` command and its arguments."""
    p = sub.add_parser("ingest", help="add rows from Parquet / Arrow IPC / CSV / JSON Lines to a store "
                                      "(created when absent)")
    p.add_argument("store", help="store directory (saved atomically after the ingest)")
    p.add_argument("file", help="input file; columns as in docs/data-model.md (vector, valid_from, ...)")
    add_file_options(p)
    p.add_argument("--dim", type=int_in(1), help="vector dimension of a new store (default: from the data)")
    p.add_argument("--metric", choices=["cosine", "ip", "l2"], default="cosine", help="new store's metric")
    p.add_argument("--half-life", type=float, metavar="DAYS",
                   help="new store's default decay: exponential with this half-life (default: none)")
    p.add_argument("--decay", action="append", metavar="TYPE=DAYS",
                   help="new store's decay for one fact type ('none' for no decay; repeatable)")
    p.add_argument("--batch", type=int_in(1), default=100_000, help="rows per ingest call (default 100000)")
    p.add_argument("--order", choices=["auto", "valid_from", "input"], default="auto",
                   help="how each batch's rows are stored: auto (default: by valid_from for a batch of >= 4096 "
                        "rows out of order, so the items in force at one time lie together: faster time-filtered "
                        "search), valid_from (every batch out of order) or input (as given); automatic ids "
                        "number the rows as stored, given ids go with their rows; see docs/data-model.md")
    p.add_argument("--threads", type=int_in(0, THREADS_MAX), default=0,
                   help=f"index build threads, at most {THREADS_MAX} (0: all cores)")
    p.set_defaults(run=run)


class _schema_errors:
    """A SchemaError of the batch starting at file row ``lo`` as a one-line CliError whose
    row is the file's."""

    def __init__(self, lo: int) -> None:
        self.lo = lo

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ, e, tb) -> bool:
        from ..errors import SchemaError
        if not isinstance(e, SchemaError):
            return False
        msg = str(e)
        if getattr(e, "row", None) is not None:
            msg += f" (file row {self.lo + int(e.row)})"
        hint = " — rename the file's columns with --map SRC=DST" \
            if getattr(e, "column", None) and ("unknown column" in msg or "missing" in msg) else ""
        raise CliError(msg + hint) from None


def run(args) -> int:
    """Validate every batch of the file, then ingest them and checkpoint the store."""
    from tqdm import tqdm

    import chrono_engine as ce

    table = apply_map(read_table(args.file, args.format), args.map)
    dim = args.dim
    if Path(args.store, "CURRENT").exists():
        eng = ce.Engine.open(args.store, threads=args.threads or None)
        if args.dim is not None and args.dim != eng.dim:
            raise CliError(f"{args.store} holds {eng.dim}-dimensional vectors, not {args.dim}")
    else:
        if dim is None:
            first = rows_from_table(table.slice(0, 1)).get("vector")
            if first is None or len(first) == 0:
                raise CliError("a new store needs --dim N (or a 'vector' column to infer it from; "
                               "rename yours with --map SRC=vector)", EXIT_USAGE)
            dim = len(first[0]) if not hasattr(first, "shape") else int(first.shape[-1])
        eng = None
    rows_of = []
    for lo in range(0, table.num_rows, args.batch):
        rows_of.append((lo, table.slice(lo, args.batch)))
    # every batch validated before the store changes: a refused file leaves the store as it
    # was (and creates no new store)
    check = eng if eng is not None else ce.Engine(int(dim), metric=args.metric, decay=decay_policy(args), threads=1)
    for lo, part in rows_of:
        with _schema_errors(lo):
            check._state.normalize(rows_from_table(part))
    if eng is None:
        # created under the writer lock: of two `chrono ingest` creating one store, the
        # second appends to the first's store or gets a one-line "store is locked" error
        eng = ce.Engine.create(args.store, int(dim), metric=args.metric, decay=decay_policy(args),
                               threads=args.threads or None, exist_ok=True)
    ids = []
    with tqdm(total=table.num_rows, unit="rows", desc="ingest", disable=None, file=sys.stderr) as bar:
        for lo, part in rows_of:
            with _schema_errors(lo):
                ids.extend(int(i) for i in eng.ingest(rows_from_table(part), order=args.order))
            bar.update(part.num_rows)
    eng.save()  # a checkpoint: the next open reads a snapshot instead of replaying the rows
    eng.close()
    out = {"store": args.store, "ingested": len(ids), "items": len(eng),
           "first_id": ids[0] if ids else None, "last_id": ids[-1] if ids else None}
    print(json.dumps(out) if args.json else
          f"{args.store}: ingested {len(ids)} rows ({len(eng)} items in the store)")
    return EXIT_OK
