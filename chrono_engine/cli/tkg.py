"""``chrono tkg eval``: temporal knowledge graph forecasting metrics (MRR, Hits@k) of a dataset."""
from __future__ import annotations

import json

from ._common import EXIT_OK


def add_parser(sub) -> None:
    """The ``tkg`` command, its ``eval`` sub-command and their arguments."""
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
    p.set_defaults(run=run)


def run(args) -> int:
    """Evaluate the model on the dataset's split and print the metrics."""
    from .. import tkg
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
