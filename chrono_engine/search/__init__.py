"""Search: the options every search takes (defined once, in :class:`SearchOptions`), a search
described once (:class:`PreparedSearch`), its run through the core's planner, and the result
table with its citations. One module each: :mod:`.options`, :mod:`.prepared`, :mod:`.run`,
:mod:`.results`, :mod:`.text` (the question in words).

:meth:`Engine.search <chrono_engine.Engine.search>`, :meth:`~chrono_engine.Engine.search_batch`,
:meth:`~chrono_engine.Engine.query` and the ``chrono search`` command all take these options,
as keywords or as one :class:`SearchOptions`:

>>> import chrono_engine as ce
>>> opts = ce.SearchOptions(mode="as_of", as_of="2024-08-15", exact=True)
>>> opts.replace(mode="latest").mode, opts.mode
('latest', 'as_of')
"""
from __future__ import annotations

from .._args import K_MAX
from .options import (FUSIONS, MODES, OUT_OF_FORCE, SCAN_ORDERS, SearchOptions, choice, instant, name_list,
                      options_for_call, options_key, query_times, real, unit_float)
from .prepared import PreparedSearch, core_params, joined, list_f32, planner_args, query_vector_one, query_vectors
from .results import (NUMERIC_COLUMNS, citations, gate, query_cuts, result_columns, result_json, result_table,
                      to_table)
from .run import FORMS, core_search, lone_table, run
from .text import (POST_FETCH_MAX, UNDATED, WINDOW_FIT_DAYS, QueryResult, embed_question, post_search, query_text,
                   window_closeness)

__all__ = ["SearchOptions", "QueryResult", "PreparedSearch", "MODES", "FUSIONS", "OUT_OF_FORCE", "SCAN_ORDERS"]
