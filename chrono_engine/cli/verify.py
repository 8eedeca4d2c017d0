"""``chrono verify``: STL robustness of reasoning chains (layer 3)."""
from __future__ import annotations

import json
from pathlib import Path

from ._common import EXIT_FILE, EXIT_OK, EXIT_USAGE, CliError, open_store, print_table


def add_parser(sub) -> None:
    """The ``verify`` command and its arguments."""
    p = sub.add_parser("verify", help="STL robustness of reasoning chains: rho, bound, re-acquisition targets")
    p.add_argument("chains", help="JSON file: [[[fact_id, ...] per step] per chain]")
    p.add_argument("--validity", metavar="FILE", help="V per fact id (.npy or text)")
    p.add_argument("--store", help="compute V from this store (fact ids are its item ids) ...")
    p.add_argument("--at", metavar="T", help="... at time T")
    p.add_argument("--gamma", type=float, required=True, help="minimum acceptable validity, in [0, 1]")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args) -> int:
    """Judge the chains against validities from a file or a store at a time."""
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
    from ..verify.chains import is_chain_list
    if not is_chain_list(chains):
        raise CliError(f"{args.chains}: expected [[[fact_id, ...] per step] per chain] with integer fact ids "
                       f"(JSON lists nested three deep)", EXIT_FILE)
    if args.store is not None:
        if args.at is None:
            raise CliError("--store needs --at T (the time to judge validity at)", EXIT_USAGE)
        validity = (open_store(args.store), args.at)
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
    print_table(ce.verify_chains(chains, validity, args.gamma), args.json,
                 ["robustness", "satisfied", "bound", "weakest_step", "weakest_fact", "targets"])
    return EXIT_OK
