"""``chrono plot-decay``: decay curves as a PNG (matplotlib, extra ``[plot]``)."""
from __future__ import annotations

import json

from ._common import EXIT_OK, CliError, decay_policy, open_store


def add_parser(sub) -> None:
    """The ``plot-decay`` command and its arguments."""
    p = sub.add_parser("plot-decay", help="draw the decay curves of a store's policy, of --decay flags, "
                                          "or of the demo's sensitivity classes (PNG; needs matplotlib)")
    p.add_argument("store", nargs="?", help="a saved store (its fact types and policy)")
    p.add_argument("--decay", action="append", metavar="TYPE=DAYS", help="exponential half-life per type (repeatable)")
    p.add_argument("--half-life", type=float, metavar="DAYS", help="default exponential half-life")
    p.add_argument("--days", type=float, default=3650.0, help="age range to draw (default 3650)")
    p.add_argument("--out", default="decay.png", help="PNG path (default decay.png)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args) -> int:
    """Draw the curves of a store's policy, of ``--decay`` flags or of the demo's classes."""
    import numpy as np
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("plot-decay needs matplotlib: pip install 'chrono_engine[plot]'") from None
    if args.store:
        eng = open_store(args.store)
        policy, names = eng.decay, list(eng.fact_types)
    elif args.decay or args.half_life is not None:
        policy = decay_policy(args)
        names = [s.split("=", 1)[0] for s in args.decay or []] or ["default"]
    else:
        from .. import demo as _demo
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
