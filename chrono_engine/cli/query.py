"""``chrono query``: a question in English or Chinese, its time words parsed, on a store of
the demo's hashed embedding."""
from __future__ import annotations

import json

from .._args import K_MAX
from ._common import EXIT_OK, CliError, int_in, open_store, print_table, text_arg


def add_parser(sub) -> None:
    """The ``query`` command and its arguments."""
    p = sub.add_parser("query", help="ask in English or Chinese (time words such as '上个月', 'as of' "
                                     "are parsed; stores of the demo's 256-dim hashed embedding)")
    p.add_argument("store")
    p.add_argument("text", type=text_arg)
    p.add_argument("-k", type=int_in(1, K_MAX), default=5)
    p.add_argument("--now", help="the present for relative times (default: the clock)")
    p.add_argument("--tz", help="time zone of the question (default UTC)")
    p.add_argument("--lang", choices=["en", "zh"], help="citation language (default: from the text)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args) -> int:
    """Answer the question from the store and print its time mode and hits."""
    from .. import demo as _demo
    eng = open_store(args.store)
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
        print_table(res.hits, False, ["id", "score", "stem_id", "version", "content", "citation"])
    return EXIT_OK
