"""The ``chrono`` command.

::

    chrono demo                         the built-in bilingual walk-through (chrono_engine.demo)
    chrono bench ...                    engine vs peers on a synthetic corpus (chrono_engine.bench)
    chrono info [STORE]                 build information; with a store, its statistics
    chrono ingest STORE FILE            Parquet / Arrow IPC / CSV / JSON Lines into a store
    chrono search STORE --vector ...    fused temporal top-k for one or more vectors
    chrono query STORE TEXT             a question in English or Chinese (time words parsed)
    chrono supersede STORE STEM FILE    a new version of a document lineage
    chrono retract STORE ID...          withdraw items (they stay in history)
    chrono history STORE STEM           every version of a lineage
    chrono verify CHAINS --validity ... STL robustness of reasoning chains
    chrono plot-decay [STORE]           decay curves as a PNG (matplotlib, extra [plot])
    chrono tkg eval [--data NAME|DIR]   TKG forecasting metrics (MRR, Hits@k) of a dataset
    chrono data list|path|download NAME benchmark datasets by name (docs/data.md)

Libraries: argparse (standard library: sub-commands, generated help, no dependency) and
tqdm for progress bars (small, maintained, no dependencies; it draws on stderr only when
that is a terminal, so ``--json`` output and pipes stay clean).

Exit codes: 0 success; 1 the engine refused the input or the request (bad column, unknown
id, lifecycle rule, a query vector of the wrong width, another writer holding the store...);
2 usage error (unknown flag, missing argument, a number out of its range such as ``--batch 0``); 3 a file is missing,
unreadable or corrupt (a store that fails its checks, a model file). Errors are one line on
stderr saying what to do (after argparse's usage line for usage errors); ``--debug`` shows
the traceback instead. A reader that closes the pipe early (``chrono demo | head``) ends the
command quietly with 1, as Python's documentation recommends.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._args import K_MAX, THREADS_MAX

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_FILE = 0, 1, 2, 3


class CliError(Exception):
    """A one-line error with its exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED):
        super().__init__(message)
        self.code = code


# ----------------------------------------------------------------------------- helpers

def _int_in(lo: int, hi: int | None = None, what: str = ""):
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


def _text(text: str) -> str:
    """An argparse type for a name or text stored or searched (a stem id, a version, a
    question): arguments that are not valid UTF-8 reach Python as lone surrogates, which no
    store can hold; a usage error says so."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid UTF-8 text") from None
    return text


def _json(text: str, what: str):
    """JSON text, or a CliError (usage) for text that is not JSON or nests too deeply."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise CliError(f"{what}: not JSON ({str(e)[:80]})", EXIT_USAGE) from None
    except RecursionError:
        raise CliError(f"{what}: JSON nested too deeply", EXIT_USAGE) from None


def _read_table(path: str, fmt: str = "auto"):
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


def _apply_map(table, mappings: list[str]):
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


def _rows_from_table(table) -> dict:
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


def _open(store: str, write: bool = False):
    """The store, read-only unless the command writes (then it holds the writer lock until
    the process exits: a second writer gets a one-line error)."""
    import chrono_engine as ce
    if not Path(store).exists():
        raise CliError(f"{store}: no such store (create one with: chrono ingest {store} FILE --dim N)",
                       EXIT_FILE)
    return ce.Engine.open(store, read_only=not write)


def _policy(args) -> Any:
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


def _print_table(table, as_json: bool, columns: list[str] | None = None) -> None:
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


# ----------------------------------------------------------------------------- commands

def cmd_info(args) -> int:
    from . import build_info
    info: dict = {"build": build_info()}
    if args.store:
        eng = _open(args.store)
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


def cmd_demo(args) -> int:
    from . import demo as _demo
    report = _demo.run(lang=args.lang)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, ensure_ascii=False, indent=2, default=str)
    return EXIT_OK


class _schema_errors:
    """A SchemaError of the batch starting at file row ``lo`` as a one-line CliError whose
    row is the file's."""

    def __init__(self, lo: int) -> None:
        self.lo = lo

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ, e, tb) -> bool:
        from .errors import SchemaError
        if not isinstance(e, SchemaError):
            return False
        msg = str(e)
        if getattr(e, "row", None) is not None:
            msg += f" (file row {self.lo + int(e.row)})"
        hint = " — rename the file's columns with --map SRC=DST" \
            if getattr(e, "column", None) and ("unknown column" in msg or "missing" in msg) else ""
        raise CliError(msg + hint) from None


def cmd_ingest(args) -> int:
    from tqdm import tqdm

    import chrono_engine as ce

    table = _apply_map(_read_table(args.file, args.format), args.map)
    dim = args.dim
    if Path(args.store, "CURRENT").exists():
        eng = ce.Engine.open(args.store, threads=args.threads or None)
        if args.dim is not None and args.dim != eng.dim:
            raise CliError(f"{args.store} holds {eng.dim}-dimensional vectors, not {args.dim}")
    else:
        if dim is None:
            first = _rows_from_table(table.slice(0, 1)).get("vector")
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
    check = eng if eng is not None else ce.Engine(int(dim), metric=args.metric, decay=_policy(args), threads=1)
    for lo, part in rows_of:
        with _schema_errors(lo):
            check._state.normalize(_rows_from_table(part))
    if eng is None:
        # created under the writer lock: of two `chrono ingest` creating one store, the
        # second appends to the first's store or gets a one-line "store is locked" error
        eng = ce.Engine.create(args.store, int(dim), metric=args.metric, decay=_policy(args),
                               threads=args.threads or None, exist_ok=True)
    ids = []
    with tqdm(total=table.num_rows, unit="rows", desc="ingest", disable=None, file=sys.stderr) as bar:
        for lo, part in rows_of:
            with _schema_errors(lo):
                ids.extend(int(i) for i in eng.ingest(_rows_from_table(part), order=args.order))
            bar.update(part.num_rows)
    eng.save()  # a checkpoint: the next open reads a snapshot instead of replaying the rows
    eng.close()
    out = {"store": args.store, "ingested": len(ids), "items": len(eng),
           "first_id": ids[0] if ids else None, "last_id": ids[-1] if ids else None}
    print(json.dumps(out) if args.json else
          f"{args.store}: ingested {len(ids)} rows ({len(eng)} items in the store)")
    return EXIT_OK


# One flag per SearchOptions field (tests/test_cli.py checks that none is missing):
# name -> (argparse keywords, help). Flags left unset keep SearchOptions' defaults.
_SEARCH_FLAGS = {
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
}


def _add_search_flags(p) -> None:
    for name, (kw, help_) in _SEARCH_FLAGS.items():
        p.add_argument("--" + name.replace("_", "-"), dest=name, default=None, help=help_, **kw)


def _search_options(args):
    """The search options of ``chrono search``'s flags."""
    from .search import SearchOptions
    given = {name: getattr(args, name) for name in _SEARCH_FLAGS if getattr(args, name) is not None}
    if "window" in given:  # 'open': an open end, as None in the Python API
        given["window"] = tuple(None if w == "open" else w for w in given["window"])
    return SearchOptions(**given)


SHOW = ["id", "score", "stem_id", "version", "title", "valid_from", "valid_to", "validity", "certified"]
# columns --explain and --verify add
_EXPLAIN_AND_GATE = ["decay", "penalty", "plan", "reason", "robustness", "satisfied", "refetch"]


def cmd_search(args) -> int:
    eng = _open(args.store)
    q = _vectors(args)
    if q.shape[-1] != eng.dim:
        raise CliError(f"the query vector has {q.shape[-1]} dimensions, the store {eng.dim}")
    opts = _search_options(args)
    res = eng.search_batch(q, args.k, opts) if q.shape[0] > 1 else eng.search(q[0], args.k, opts)
    extra = [c for c in res.column_names if c in _EXPLAIN_AND_GATE]
    _print_table(res, args.json, (["query"] if q.shape[0] > 1 else []) + SHOW + extra)
    return EXIT_OK


def cmd_query(args) -> int:
    from . import demo as _demo
    eng = _open(args.store)
    if eng.dim != _demo.DIM:
        raise CliError(f"chrono query embeds text with the built-in hashed bag of words "
                       f"({_demo.DIM} dims); this store holds {eng.dim}-dimensional vectors. "
                       f"Use the Python API (engine.query(text, embed=...)) with your encoder")
    res = eng.query(args.text, k=args.k, now=args.now, tz=args.tz, lang=args.lang, embed=_demo.embed)
    if args.json:
        print(json.dumps({"mode": res.intent.mode, "hits": res.hits.to_pylist()},
                         ensure_ascii=False, default=str, indent=1))
    else:
        print(f"mode: {res.intent.mode}")
        _print_table(res.hits, False, ["id", "score", "stem_id", "version", "content", "citation"])
    return EXIT_OK


def cmd_supersede(args) -> int:
    eng = _open(args.store, write=True)
    table = _apply_map(_read_table(args.file, args.format), args.map)
    ids = eng.supersede(args.stem, _rows_from_table(table), args.effective_at, version=args.version)
    eng.close()  # logged and synced: durable without a snapshot
    ids = [int(i) for i in ids]
    print(json.dumps({"stem_id": args.stem, "ids": ids}) if args.json else
          f"{args.stem}: new version with ids {ids}")
    return EXIT_OK


def cmd_retract(args) -> int:
    eng = _open(args.store, write=True)
    kw = {} if args.at is None else {"at": args.at}
    done = [int(i) for i in eng.retract(args.ids, **kw)]
    eng.close()
    print(json.dumps({"retracted": done}) if args.json else f"retracted {done}")
    return EXIT_OK


def cmd_history(args) -> int:
    eng = _open(args.store)
    _print_table(eng.history(args.stem), args.json,
                 ["id", "version", "valid_from", "valid_to", "ingested_at", "retracted_at", "deprecated", "title"])
    return EXIT_OK


def cmd_serve(args) -> int:
    try:
        from .serve import Limits, serve
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


def cmd_verify(args) -> int:
    import numpy as np
    import chrono_engine as ce

    p = Path(args.chains)
    if not p.exists():
        raise CliError(f"{args.chains}: no such file", EXIT_FILE)
    try:
        chains = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:80]
        raise CliError(f"{args.chains}: not JSON ({why}); expected [[[fact_id, ...], ...], ...]", EXIT_FILE) from None
    from .verify.chains import is_chain_list
    if not is_chain_list(chains):
        raise CliError(f"{args.chains}: expected [[[fact_id, ...] per step] per chain] with integer fact ids "
                       f"(JSON lists nested three deep)", EXIT_FILE)
    if args.store is not None:
        if args.at is None:
            raise CliError("--store needs --at T (the time to judge validity at)", EXIT_USAGE)
        validity = (_open(args.store), args.at)
    elif args.validity is not None:
        vp = Path(args.validity)
        if not vp.exists():
            raise CliError(f"{args.validity}: no such file", EXIT_FILE)
        try:
            validity = np.load(vp) if vp.suffix == ".npy" else np.loadtxt(vp, ndmin=1)
        except (ValueError, OSError, EOFError) as e:
            raise CliError(f"{args.validity}: cannot read validities ({str(e).splitlines()[0] if str(e) else e!r})",
                           EXIT_FILE) from None
    else:
        raise CliError("give --validity FILE (.npy or text, one V per fact id) or --store STORE --at T",
                       EXIT_USAGE)
    _print_table(ce.verify_chains(chains, validity, args.gamma), args.json,
                 ["robustness", "satisfied", "bound", "weakest_step", "weakest_fact", "targets"])
    return EXIT_OK


def cmd_plot_decay(args) -> int:
    import numpy as np
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("plot-decay needs matplotlib: pip install 'chrono_engine[plot]'") from None
    if args.store:
        eng = _open(args.store)
        policy, names = eng.decay, list(eng.fact_types)
    elif args.decay or args.half_life is not None:
        policy = _policy(args)
        names = [s.split("=", 1)[0] for s in args.decay or []] or ["default"]
    else:
        from . import demo as _demo
        policy, names = _demo.decay_policy(), list(_demo.CLASSES)
    ages = np.linspace(0.0, float(args.days), 400)
    fig, ax = plt.subplots(figsize=(7, 4))
    curves = {}
    for name in names:
        d = policy.evaluate(ages, np.full(len(ages), name, dtype=object))
        curves[name] = d
        ax.plot(ages, d, label=name)
    ax.set_xlabel("age (days)")
    ax.set_ylabel("D(age)")
    ax.set_ylim(0, 1.05)
    ax.set_title("decay per fact type")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    plt.close(fig)
    marks = [0, 30, 90, 365, 1825]
    out = {"png": str(args.out), "types": names,
           "at_days": {str(m): {n: float(policy.evaluate(np.array([float(m)]), np.array([n], dtype=object))[0])
                                for n in names} for m in marks}}
    print(json.dumps(out, indent=1) if args.json else f"decay curves of {len(names)} fact types written to {args.out}")
    return EXIT_OK


def cmd_tkg_eval(args) -> int:
    from . import tkg
    d = tkg.load(args.data)
    if args.model == "rules":
        res = tkg.evaluate_rules(d, args.split, decay=args.decay, confidence=args.confidence,
                                 seed=args.seed)
    else:
        res = tkg.evaluate(d, args.split, half_life=args.half_life)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2)
    print(f"{args.data} [{args.split}, {res['setting']}, ties: {res['ties']}, {res['model']}]: "
          f"MRR {res['mrr']:.4f}  Hits@1 {res['hits@1']:.4f}  Hits@3 {res['hits@3']:.4f}  "
          f"Hits@10 {res['hits@10']:.4f}  ({res['queries']} queries, {res['seconds']:.1f} s, "
          f"peak {res['peak_mb']:.0f} MB)")
    return EXIT_OK


def cmd_data(args) -> int:
    from . import datasets
    from .errors import DatasetNotFoundError, DownloadError
    try:
        if args.data_command == "list":
            where = datasets.data_dir(args.data_dir)
            print(f"data directory: {where}")
            for name in datasets.names():
                state = "present" if datasets.is_present(name, args.data_dir) else "absent"
                print(f"  {name:10s} {state:8s} {datasets.get(name).description}")
        elif args.data_command == "path":
            print(datasets.locate(datasets.get(args.name).name, args.data_dir))
        else:
            root = datasets.download(args.name, args.data_dir, base_url=args.base_url, timeout=args.timeout,
                                     force=args.force)
            print(f"{args.name}: {len(datasets.get(args.name).files)} files checked in {root}")
    except (DatasetNotFoundError, DownloadError) as e:
        raise CliError(str(e), EXIT_FILE) from None
    return EXIT_OK


def cmd_bench(argv: list[str]) -> int:
    if "--serve" in argv:  # the HTTP service under load (chrono_engine/bench/serve_load.py)
        from .bench import serve_load
        serve_load.main([a for a in argv if a != "--serve"])
        return EXIT_OK
    from . import bench
    bench.main(argv, prog="chrono bench")
    return EXIT_OK


# ----------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="chrono", description="chrono_engine: temporal-validity retrieval for RAG. "
                                  "Exit codes: 0 ok, 1 refused input, 2 usage, 3 missing or unreadable file.")
    top.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="walk through the built-in bilingual versioned-knowledge demo")
    p.add_argument("--lang", choices=["both", "en", "zh"], default="both",
                   help="language of the questions and labels (default: both)")
    p.add_argument("--json", metavar="PATH", help="also write what was shown as JSON")
    p.set_defaults(run=cmd_demo)

    sub.add_parser("bench", add_help=False,
                   help="engine vs NumPy / Numba / hnswlib on a synthetic corpus (chrono bench --help); "
                        "--serve: the HTTP service under load (chrono bench --serve --help)")

    p = sub.add_parser("info", help="build information; with STORE, its size, schema and memory")
    p.add_argument("store", nargs="?", help="a saved store directory")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.set_defaults(run=cmd_info)

    def file_opts(p):
        p.add_argument("--format", choices=["auto", "parquet", "arrow", "csv", "jsonl"], default="auto",
                       help="input format (default: from the suffix)")
        p.add_argument("--map", action="append", metavar="SRC=DST",
                       help="rename a column of the file to an engine column (repeatable)")
        p.add_argument("--json", action="store_true", help="JSON output")

    p = sub.add_parser("ingest", help="add rows from Parquet / Arrow IPC / CSV / JSON Lines to a store "
                                      "(created when absent)")
    p.add_argument("store", help="store directory (saved atomically after the ingest)")
    p.add_argument("file", help="input file; columns as in docs/data-model.md (vector, valid_from, ...)")
    file_opts(p)
    p.add_argument("--dim", type=_int_in(1), help="vector dimension of a new store (default: from the data)")
    p.add_argument("--metric", choices=["cosine", "ip", "l2"], default="cosine", help="new store's metric")
    p.add_argument("--half-life", type=float, metavar="DAYS",
                   help="new store's default decay: exponential with this half-life (default: none)")
    p.add_argument("--decay", action="append", metavar="TYPE=DAYS",
                   help="new store's decay for one fact type ('none' for no decay; repeatable)")
    p.add_argument("--batch", type=_int_in(1), default=100_000, help="rows per ingest call (default 100000)")
    p.add_argument("--order", choices=["auto", "valid_from", "input"], default="auto",
                   help="how each batch's rows are stored: auto (default: by valid_from for a batch of >= 4096 "
                        "rows out of order, so the items in force at one time lie together: faster time-filtered "
                        "search), valid_from (every batch out of order) or input (as given); automatic ids "
                        "number the rows as stored, given ids go with their rows; see docs/data-model.md")
    p.add_argument("--threads", type=_int_in(0, THREADS_MAX), default=0,
                   help=f"index build threads, at most {THREADS_MAX} (0: all cores)")
    p.set_defaults(run=cmd_ingest)

    p = sub.add_parser("search", help="fused temporal top-k for query vectors")
    p.add_argument("store")
    p.add_argument("--vector", help="one query vector as a JSON list")
    p.add_argument("--vectors", metavar="FILE", help="query vectors (.npy, or text: one per line)")
    p.add_argument("-k", type=_int_in(1, K_MAX), default=10, help="results per query (default 10)")
    p.add_argument("--json", action="store_true", help="JSON output")
    _add_search_flags(p)
    p.set_defaults(run=cmd_search)

    p = sub.add_parser("query", help="ask in English or Chinese (time words such as '上个月', 'as of' "
                                     "are parsed; stores of the demo's 256-dim hashed embedding)")
    p.add_argument("store")
    p.add_argument("text", type=_text)
    p.add_argument("-k", type=_int_in(1, K_MAX), default=5)
    p.add_argument("--now", help="the present for relative times (default: the clock)")
    p.add_argument("--tz", help="time zone of the question (default UTC)")
    p.add_argument("--lang", choices=["en", "zh"], help="citation language (default: from the text)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_query)

    p = sub.add_parser("supersede", help="add a new version of lineage STEM from FILE, effective at T")
    p.add_argument("store")
    p.add_argument("stem", type=_text, help="stem_id of the lineage")
    p.add_argument("file", help="the new version's rows")
    p.add_argument("--effective-at", required=True, metavar="T", help="when the new version takes effect")
    p.add_argument("--version", type=_text, help="version string (default: the next major)")
    file_opts(p)
    p.set_defaults(run=cmd_supersede)

    p = sub.add_parser("retract", help="retract items by id (kept in history, invisible after --at)")
    p.add_argument("store")
    p.add_argument("ids", nargs="+", type=_int_in(0, 2**64 - 1, " (an item id)"))
    p.add_argument("--at", metavar="T", help="transaction time of the retraction (default: now)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_retract)

    p = sub.add_parser("history", help="every version of lineage STEM, oldest first")
    p.add_argument("store")
    p.add_argument("stem", type=_text)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_history)

    p = sub.add_parser("serve", help="serve STORE over HTTP (loopback by default; API keys from "
                                     "CHRONO_API_KEYS / CHRONO_READ_KEYS or --keys-file)")
    p.add_argument("store")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_int_in(0, 65535, " (a port)"), default=8000)
    p.add_argument("--name", type=_text, help="the collection's name (default: the store folder's name)")
    p.add_argument("--keys-file", metavar="FILE", help="lines 'admin KEY' / 'read KEY'")
    p.add_argument("--no-auth", action="store_true", help="no keys (loopback addresses only)")
    p.add_argument("--threads", type=_int_in(1, 1024, ""), help="the engine's worker threads (default: all cores)")
    p.add_argument("--max-body", type=_int_in(1, 2**40, " (bytes)"), default=16 * 2**20)
    p.add_argument("--max-batch", type=_int_in(1, 2**20, ""), default=1024)
    p.add_argument("--max-rows", type=_int_in(1, 2**30, ""), default=100_000)
    p.add_argument("--max-k", type=_int_in(1, 10_000, ""), default=1000)
    p.add_argument("--max-fact-types", type=_int_in(1, 2**20, ""), default=1024, help="fact types a search names")
    p.add_argument("--max-text", type=_int_in(1, 2**24, " (characters)"), default=10_000,
                   help="characters of a /query text")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds a read may take (504 after)")
    p.add_argument("--snapshots", metavar="DIR", help="where named snapshots go (default: STORE.snapshots beside it)")
    p.add_argument("--read-only", action="store_true",
                   help="a read replica: no writer lock (serve beside the store's writer), writes answer 403")
    p.add_argument("--refresh", type=_seconds_in(0.0, 86400.0), metavar="SECONDS",
                   help="with --read-only: open the store again when it has changed, checked this often")
    p.add_argument("--workers", type=_int_in(1, 256, ""), default=1,
                   help="with --read-only: worker processes on one port, each its own engine and event loop "
                        "(--threads each; default: the cores shared out)")
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser("plot-decay", help="draw the decay curves of a store's policy, of --decay flags, "
                                          "or of the demo's sensitivity classes (PNG; needs matplotlib)")
    p.add_argument("store", nargs="?", help="a saved store (its fact types and policy)")
    p.add_argument("--decay", action="append", metavar="TYPE=DAYS", help="exponential half-life per type (repeatable)")
    p.add_argument("--half-life", type=float, metavar="DAYS", help="default exponential half-life")
    p.add_argument("--days", type=float, default=3650.0, help="age range to draw (default 3650)")
    p.add_argument("--out", default="decay.png", help="PNG path (default decay.png)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_plot_decay)

    p = sub.add_parser("data", help="benchmark datasets by name: list, path NAME, download NAME")
    dsub = p.add_subparsers(dest="data_command", required=True, metavar="DATA_COMMAND")
    data_cmds = {
        "list": dsub.add_parser("list", help="the known datasets, the data directory and which are present"),
        "path": dsub.add_parser("path", help="print the folder of dataset NAME (exit 3 and how to get it "
                                             "if it is absent)"),
        "download": dsub.add_parser("download", help="fetch dataset NAME from its pinned public sources "
                                                     "(size and sha256 checked)")}
    for p in data_cmds.values():
        p.add_argument("--data-dir", help="data directory (default: $CHRONO_DATA_DIR, else the per-user cache)")
        p.set_defaults(run=cmd_data)
    for p in (data_cmds["path"], data_cmds["download"]):
        p.add_argument("name", metavar="NAME")
    p = data_cmds["download"]
    p.add_argument("--base-url", help="mirror serving OWNER/REPO/COMMIT/PATH (default: $CHRONO_DATA_URL, "
                                      "else raw.githubusercontent.com)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a connection or a read")
    p.add_argument("--force", action="store_true", help="fetch every file again, even those already checked")

    p = sub.add_parser("tkg", help="temporal knowledge graph forecasting (tkg eval --data NAME|DIR)")
    tsub = p.add_subparsers(dest="tkg_command", required=True, metavar="TKG_COMMAND")
    p = tsub.add_parser("eval", help="single-step, time-aware filtered MRR / Hits@k of a dataset "
                                     "(names or ids format): temporal rules mined, learned and applied")
    p.add_argument("--data", default="icews14", help="dataset name found in the data directory "
                   "(default icews14; see `chrono data list`) or a directory with train.txt, valid.txt, test.txt")
    p.add_argument("--split", choices=["test", "valid"], default="test")
    p.add_argument("--model", choices=["rules", "recurrency"], default="rules",
                   help="rules: temporal rules with learned decay (default); recurrency: the decayed baseline")
    p.add_argument("--decay", choices=["per_rule", "global", "ou", "none"], default="per_rule",
                   help="rules: β per rule, one global β, β = 2κ from an OU fit per rule, or no decay (ablation)")
    p.add_argument("--confidence", choices=["table", "curve"], default="table",
                   help="rules: confidence per (gap, grounding count) bin shrunk to the fitted curve "
                        "(default), or the curve c·e^(-βΔ) alone (ablation)")
    p.add_argument("--seed", type=int, default=0, help="rules: random-walk and sampling seed")
    p.add_argument("--half-life", type=float, default=30.0, help="recurrency: decay half-life in days")
    p.add_argument("--json", metavar="PATH", help="also write mrr, hits@1/3/10, queries, seconds, peak_mb")
    p.set_defaults(run=cmd_tkg_eval)

    p = sub.add_parser("verify", help="STL robustness of reasoning chains: rho, bound, re-acquisition targets")
    p.add_argument("chains", help="JSON file: [[[fact_id, ...] per step] per chain]")
    p.add_argument("--validity", metavar="FILE", help="V per fact id (.npy or text)")
    p.add_argument("--store", help="compute V from this store (fact ids are its item ids) ...")
    p.add_argument("--at", metavar="T", help="... at time T")
    p.add_argument("--gamma", type=float, required=True, help="minimum acceptable validity, in [0, 1]")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_verify)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    rest = [a for a in argv if a != "--debug"]
    if rest[:1] == ["bench"]:
        return cmd_bench(rest[1:])
    parser = build_parser()
    args = parser.parse_args(rest)  # usage errors: argparse prints usage + message, exit 2
    from .errors import ChronoError, ModelFileError, StorageError, StoreLockedError
    try:
        return args.run(args)
    except StoreLockedError as e:  # another writer has the store: refused, not a file problem
        if debug:
            raise
        print(f"chrono {args.command}: error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except CliError as e:
        if debug:
            raise
        print(f"chrono {args.command}: error: {e}", file=sys.stderr)
        return e.code
    except (StorageError, ModelFileError) as e:  # a store or model file missing, unreadable or corrupt
        if debug:
            raise
        print(f"chrono {args.command}: error: {e}", file=sys.stderr)
        return EXIT_FILE
    except ChronoError as e:
        if debug:
            raise
        print(f"chrono {args.command}: error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except BrokenPipeError:  # `chrono demo | head`: the reader left; no message
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_REFUSED
    except OSError as e:
        if debug:
            raise
        print(f"chrono {args.command}: error: {e}", file=sys.stderr)
        return EXIT_FILE


if __name__ == "__main__":
    sys.exit(main())
