"""The one door from tests into an Engine's internals.

Tests use the public API (``Engine.columns``, ``vectors``, ``strings``, ``stats``,
``partition``, ...). A few cannot: they call the compiled core's kernels and index
queries directly (``bound_rows``, ``rows_valid_at``, ``search_one``), edit rows the
way only an old log can (``Store.update``), swap the core for a wrapper to fail a save
or to run a reader mid-write, or check the write lock. Those tests live in
``tests/test_internal_*.py`` and reach the internals through this module alone, so
that a change of the Engine's private layout is fixed here, once (docs/README.md).
"""
from __future__ import annotations

from typing import Any

import chrono_engine as ce


def state(engine: ce.Engine) -> Any:
    """The engine's store in memory (:class:`chrono_engine._state.StoreState`): the compiled
    core, the names behind its codes, the string table and the write lock."""
    return engine._state


def core(engine: ce.Engine) -> Any:
    """The engine's compiled store (``chrono_engine._core.Store``)."""
    return state(engine).core
