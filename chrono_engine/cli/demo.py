"""``chrono demo``: the built-in bilingual walk-through (:mod:`chrono_engine.demo`)."""
from __future__ import annotations

import json

from ._common import EXIT_OK


def add_parser(sub) -> None:
    """The ``demo`` command and its arguments."""
    p = sub.add_parser("demo", help="walk through the built-in bilingual versioned-knowledge demo")
    p.add_argument("--lang", choices=["both", "en", "zh"], default="both",
                   help="language of the questions and labels (default: both)")
    p.add_argument("--json", metavar="PATH", help="also write what was shown as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    """Run the demo; with ``--json PATH`` also write what it showed."""
    from .. import demo as _demo
    report = _demo.run(lang=args.lang)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, ensure_ascii=False, indent=2, default=str)
    return EXIT_OK
