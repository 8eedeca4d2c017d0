"""Temporal knowledge graphs (layer 2): loading and the forecasting evaluation
(temporal rules with learned decay, and a decayed recurrency baseline).

:func:`load` reads a TKG forecasting dataset, a directory or a name such as ``"icews14"``
(:mod:`chrono_engine.datasets`), in either of its two formats (TLogic "names" lines
``s<TAB>r<TAB>o<TAB>YYYY-MM-DD`` or xERTE / RE-NET "ids" lines
``s<TAB>r<TAB>o<TAB>time<TAB>flag``; ``docs/data.md``) into Arrow columns.
"""
from .data import TKG, load
from . import graph, rules
from .evaluate import evaluate, evaluate_rules, rank_average, steps

__all__ = ["TKG", "load", "evaluate", "evaluate_rules", "rank_average", "steps", "rules", "graph"]
