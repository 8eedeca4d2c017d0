"""Temporal knowledge graphs (layer 2, issue 6): loading and the forecasting evaluation
(with a decayed recurrency baseline; the rule learner is still to come).

:func:`load` reads a TKG forecasting dataset directory in either format of
``../shared/data/README.md`` (TLogic "names" lines ``s<TAB>r<TAB>o<TAB>YYYY-MM-DD`` or
xERTE / RE-NET "ids" lines ``s<TAB>r<TAB>o<TAB>time<TAB>flag``) into Arrow columns.
"""
from .data import TKG, load
from .evaluate import evaluate, rank_average

__all__ = ["TKG", "load", "evaluate", "rank_average"]
