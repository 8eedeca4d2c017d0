"""Temporal knowledge graphs (layer 2, issue 6): loading and the forecasting evaluation
(temporal rules with learned decay, and a decayed recurrency baseline).

:func:`load` reads a TKG forecasting dataset directory in either format of
``../shared/data/README.md`` (TLogic "names" lines ``s<TAB>r<TAB>o<TAB>YYYY-MM-DD`` or
xERTE / RE-NET "ids" lines ``s<TAB>r<TAB>o<TAB>time<TAB>flag``) into Arrow columns.
"""
from .data import TKG, load
from . import graph, rules
from .evaluate import evaluate, evaluate_rules, rank_average

__all__ = ["TKG", "load", "evaluate", "evaluate_rules", "rank_average", "rules", "graph"]
