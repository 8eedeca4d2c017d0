"""What the ``chrono`` commands share: the exit codes and :class:`CliError`, argparse types,
reading a table file into ingest columns, opening a store, a decay policy from flags, and
printing a result table."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_FILE = 0, 1, 2, 3


class CliError(Exception):
    """A one-line error with its exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED):
        super().__init__(message)
        self.code = code


def int_in(lo: int, hi: int | None = None, what: str = ""):
    """An argparse type: an integer in [lo, hi] (hi None: no upper bound), else a usage
    error (exit 2) saying the range."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            bound = f"at least {lo}" if hi is None else f"from {lo} to {hi}"
            raise argparse.ArgumentTypeError(f"must be an integer {bound}{what}, got {text}")
        return v
    return parse


def text_arg(text: str) -> str:
    """An argparse type for a name or text stored or searched (a stem id, a version, a
    question): arguments that are not valid UTF-8 reach Python as lone surrogates, which no
    store can hold; a usage error says so."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid UTF-8 text") from None
    return text


def add_file_options(p) -> None:
    """The options of a command that reads a table file: ``--format``, ``--map``, ``--json``."""
    p.add_argument("--format", choices=["auto", "parquet", "arrow", "csv", "jsonl"], default="auto",
                   help="input format (default: from the suffix)")
    p.add_argument("--map", action="append", metavar="SRC=DST",
                   help="rename a column of the file to an engine column (repeatable)")
    p.add_argument("--json", action="store_true", help="JSON output")


def read_table(path: str, fmt: str = "auto"):
    """A pyarrow Table from Parquet, Arrow IPC (file or stream), CSV or JSON Lines."""
    import pyarrow as pa

    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file", EXIT_FILE)
    if not p.is_file():
        raise CliError(f"{path}: not a file", EXIT_FILE)
    if fmt == "auto":
        suffix = p.suffix.lower()
        fmt = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
               ".ipc": "arrow", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
               ".json": "jsonl"}.get(suffix)
        if fmt is None:
            raise CliError(f"{path}: cannot tell the format from the suffix {suffix!r}; "
                           f"pass --format parquet|arrow|csv|jsonl", EXIT_USAGE)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            return pq.read_table(p)
        if fmt == "arrow":
            import pyarrow.ipc as ipc
            try:
                return ipc.open_file(p).read_all()
            except pa.ArrowInvalid:
                return ipc.open_stream(p).read_all()
        if fmt == "csv":
            import pyarrow.csv as pcsv
            return pcsv.read_csv(p)
        if fmt == "jsonl":
            import pyarrow.json as pjson
            return pjson.read_json(p)
    except (pa.ArrowException, OSError) as e:
        raise CliError(f"{path}: cannot read as {fmt} ({str(e).splitlines()[0]})", EXIT_FILE) from None
    raise CliError(f"unknown format {fmt!r}", EXIT_USAGE)


def apply_map(table, mappings: list[str]):
    """Rename columns SRC=DST (so a file's names can meet the engine's schema)."""
    names = list(table.column_names)
    for m in mappings or []:
        if "=" not in m:
            raise CliError(f"--map expects SRC=DST, got {m!r}", EXIT_USAGE)
        src, dst = m.split("=", 1)
        if src not in names:
            raise CliError(f"--map {m}: the file has no column {src!r} (columns: {', '.join(names)})")
        names[names.index(src)] = dst
    return table.rename_columns(names)


def rows_from_table(table) -> dict:
    """Columns for Engine.ingest; a text vector column ("[0.1, 0.2]" or "0.1 0.2") is parsed."""
    import numpy as np
    import pyarrow as pa

    cols = {name: table.column(name) for name in table.column_names}
    vec = cols.get("vector")
    if vec is not None and (pa.types.is_string(vec.type) or pa.types.is_large_string(vec.type)):
        parsed = []
        for i, s in enumerate(vec.to_pylist()):
            try:
                v = json.loads(s) if s.strip().startswith("[") else [float(x) for x in s.split()]
                ok = isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
            except (ValueError, AttributeError, RecursionError):
                ok = False
            if not ok:
                raise CliError(f"column 'vector', row {i}: cannot read {str(s)[:80]!r} as a list of numbers")
            parsed.append(v)
        # rows of one width: one float32 matrix; of several (or numbers beyond float): the rows
        # as they are, so that the engine names the first bad row
        cols["vector"] = parsed if parsed else np.zeros((0, 0), np.float32)
        if len({len(v) for v in parsed}) == 1:
            try:
                cols["vector"] = np.asarray(parsed, dtype=np.float32)
            except (ValueError, OverflowError):
                pass
    return cols


def open_store(store: str, write: bool = False):
    """The store, read-only unless the command writes (then it holds the writer lock until
    the process exits: a second writer gets a one-line error)."""
    import chrono_engine as ce
    if not Path(store).exists():
        raise CliError(f"{store}: no such store (create one with: chrono ingest {store} FILE --dim N)",
                       EXIT_FILE)
    return ce.Engine.open(store, read_only=not write)


def decay_policy(args) -> Any:
    import chrono_engine as ce
    profiles = {}
    for spec in args.decay or []:
        if "=" not in spec:
            raise CliError(f"--decay expects TYPE=HALF_LIFE_DAYS, got {spec!r}", EXIT_USAGE)
        name, hl = spec.split("=", 1)
        try:
            profiles[name] = ce.NoDecay() if hl in ("none", "inf") else ce.Exponential(half_life=float(hl))
        except ValueError:
            raise CliError(f"--decay {spec}: {hl!r} is not a number of days (or 'none')", EXIT_USAGE) from None
    default = ce.NoDecay() if args.half_life is None else ce.Exponential(half_life=args.half_life)
    return ce.DecayPolicy(profiles, default=default)


def print_table(table, as_json: bool, columns: list[str] | None = None) -> None:
    rows = table.to_pylist()
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, default=str, indent=1))
        return
    cols = [c for c in (columns or table.column_names) if c in table.column_names]
    if not rows:
        print("(no rows)")
        return
    text = [[_cell(r[c]) for c in cols] for r in rows]
    width = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, width)))
    for t in text:
        print("  ".join(x.ljust(w) for x, w in zip(t, width)))


def _cell(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4f}"
    s = "" if x is None else str(x)
    return s if len(s) <= 60 else s[:59] + "…"
