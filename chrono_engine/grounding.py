"""``ground_rows``: rows whose time is in their text, made ready for :meth:`Engine.ingest`.

A chunk of text states facts at several times ("joined X in 2009 ... moved to Y in 2013").
One validity interval per chunk — its earliest to its latest date — is "valid" for nearly
every question, so a grounded chunk is stored as **one row per fact**: the chunk's vector,
text and other columns repeated, each row with the validity of one fact from
:func:`chrono_engine.ground`. A chunk with no placeable time is **undated**: one row with
``valid_from = MIN_TIME_US`` (the beginning of time) and an open end — the engine's
mark of an undated item (a fact with only an end, "until 2005", starts at the beginning of
time too but has that end). :meth:`Engine.query`
treats the rows as the items they came from (docs/time.md, "Grounding"): it returns each
text once (``distinct=True``), and leaves undated items out when the question has a time
constraint (``undated="auto"``).
"""
from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa

from ._time import MIN_TIME_US, OPEN_END, _calendar_us
from .errors import SchemaError
from .schema import canonical_column, column_length, columns_of
from .timelang.ground import ground

__all__ = ["ground_rows"]

_REFUSED = {"valid_from": "ground_rows sets valid_from and valid_to from the text: drop the column "
                          "(ingest rows that already carry their validity as they are)",
            "valid_to": "ground_rows sets valid_from and valid_to from the text: drop the column",
            "id": "ground_rows repeats a chunk once per fact, so ids cannot be kept: drop the id column "
                  "(the engine assigns them)"}


def _take(name: str, col: Any, src: np.ndarray) -> Any:
    if isinstance(col, np.ndarray) and col.ndim == 2:  # a vector matrix
        return col[src]
    col = canonical_column(name, col)
    if isinstance(col, np.ndarray):
        return col[src]
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        return col.take(pa.array(src, pa.int64()))
    return [col[i] for i in src.tolist()]


def ground_rows(rows: Any, *, doc_date: Any = None, tz: Any = None) -> dict[str, Any]:
    """One row per fact of each row's ``content`` (:func:`chrono_engine.ground`), ready for
    :meth:`Engine.ingest`; undated chunks once, from the beginning of time, open-ended.

    ``rows``: what :meth:`Engine.ingest` takes (a pyarrow Table or RecordBatch, a pandas
    DataFrame, a dict of columns, a list of row dicts) with a ``content`` column and without
    ``valid_from``, ``valid_to`` and ``id`` (they are set here). Every other column is
    repeated with its row. ``doc_date``: when the texts were written, for relative
    expressions ("last year"): None (unknown: anaphoric ones follow the narrative, deictic
    ones are dropped), one time for all rows, or a sequence with one per row (None where
    unknown); times as :func:`chrono_engine.parse_time` takes ``now``. ``tz``: the zone of
    naive times. The rows' other columns are checked by :meth:`Engine.ingest`, not here.

    Returns a dict of columns. ``observed_at`` is left as given: absent, each row's decay
    is measured from its fact's start.
    """
    cols = columns_of(rows)
    for name in cols:
        if name in _REFUSED:
            raise SchemaError(_REFUSED[name], column=name, rule="set by ground_rows")
    if "content" not in cols:
        raise SchemaError("ground_rows needs a 'content' column: the text to read times from",
                          column="content", rule="required column")
    n = column_length("content", cols["content"])
    for name, col in cols.items():
        m = column_length(name, col)
        if m != n:
            raise SchemaError(f"column {name!r} has {m} rows, 'content' has {n}", column=name,
                              rule="column lengths differ")
    content = canonical_column("content", cols["content"])
    texts = content.to_pylist() if isinstance(content, (pa.Array, pa.ChunkedArray)) else list(content)
    if isinstance(doc_date, np.ndarray) and doc_date.ndim == 0:
        doc_date = doc_date.item()
    if doc_date is None or isinstance(doc_date, (str, bytes, date)) or not hasattr(doc_date, "__len__"):
        dates = [doc_date] * n
    else:
        try:
            dates = list(doc_date.to_pylist() if isinstance(doc_date, (pa.Array, pa.ChunkedArray)) else doc_date)
        except TypeError as e:
            raise SchemaError(f"doc_date must be a time or one per row: {e}", column="doc_date",
                              rule="wrong type") from None
        if len(dates) != n:
            raise SchemaError(f"doc_date has {len(dates)} values for {n} rows", column="doc_date",
                              rule="one per row")
    src, vf, vt = [], [], []
    for i, (text, when) in enumerate(zip(texts, dates)):
        if text is not None and not isinstance(text, str):
            raise SchemaError(f"content must be strings, row {i} is {type(text).__name__}",
                              column="content", row=i, rule="wrong type")
        facts = ground(text, when, tz=tz) if text else []
        if not facts:
            src.append(i)
            vf.append(MIN_TIME_US)
            vt.append(OPEN_END)
            continue
        for f in facts:
            src.append(i)
            # a fact's ends are datetimes (ground's contract): scalar_us's conversion,
            # without its checks of the value's kind (~2% of the call)
            vf.append(_calendar_us(f.start) if f.start is not None else MIN_TIME_US)
            vt.append(_calendar_us(f.end) if f.end is not None else OPEN_END)
    idx = np.asarray(src, np.int64)
    out = {name: _take(name, c, idx) for name, c in cols.items()}
    out["valid_from"] = np.asarray(vf, np.int64)
    out["valid_to"] = np.asarray(vt, np.int64)
    return out
