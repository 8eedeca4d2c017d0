"""Temporal knowledge graphs (layer 2, issue 6): loading for now.

:func:`load` reads a TKG forecasting dataset directory in either format of
``../shared/data/README.md`` (TLogic "names" lines ``s<TAB>r<TAB>o<TAB>YYYY-MM-DD`` or
xERTE / RE-NET "ids" lines ``s<TAB>r<TAB>o<TAB>time<TAB>flag``) into Arrow columns.
"""
from .data import TKG, load

__all__ = ["TKG", "load"]
