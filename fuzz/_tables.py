"""Ingest batches made from a byte string, for fuzz_ingest.py and make_corpus.py.

The fuzzer's bytes are read as a list of choices (:class:`Reader`, one byte each): the
container (Arrow table or record batch, dict of lists or of NumPy arrays, list of row dicts,
pandas), the row count, which columns are present (and whether one has the wrong length),
each column's encoding and values. Choice 0 (or the ``valid`` one) of every value list
is an ordinary, valid value; the others are edge cases (NaN, inf, open ends, int64
extremes, lone surrogates, wrong types and lengths). :class:`Recorder` makes the same
choices from a seeded generator and keeps them as bytes: the seed corpus is such
recordings, so every seed is a batch this module can build.
"""
from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

DIM = 4
DAY_US = 86_400_000_000
I64_MAX, I64_MIN = 2**63 - 1, -2**63
Y2020_US = 1_577_836_800_000_000


class Reader:
    """Choices read from the fuzzer's bytes, one byte each (0 once they run out)."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def choose(self, n: int, valid: int | tuple | None = None) -> int:
        """A choice in range(n) (``valid`` only guides a :class:`Recorder`)."""
        b = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return b % n

    def rest(self) -> bytes:
        """The bytes not yet read."""
        return self.data[self.pos:]


class Recorder:
    """Choices made by a seeded generator, kept as the bytes a :class:`Reader` replays.
    With probability ``p_valid`` a choice is the ``valid`` one (any when None)."""

    def __init__(self, seed: int, p_valid: float):
        self.rng, self.p_valid, self.out = random.Random(seed), p_valid, bytearray()

    def choose(self, n: int, valid: int | tuple | None = None) -> int:
        """A choice in range(n), recorded."""
        if valid is None or self.rng.random() >= self.p_valid:
            v = self.rng.randrange(n)
        else:
            v = valid if isinstance(valid, int) else self.rng.choice(valid)
        self.out.append(v)
        return v


def pick(c, options: Sequence, valid: int | tuple | None = 0):
    """One of ``options``, by the chooser ``c``."""
    return options[c.choose(len(options), valid)]


# --------------------------------------------------------------------------- values per column

_TIME_BASE = {"valid_from": Y2020_US, "valid_to": Y2020_US + 3650 * DAY_US,
              "observed_at": Y2020_US + 400 * DAY_US, "ingested_at": Y2020_US + 800 * DAY_US,
              "retracted_at": Y2020_US + 5000 * DAY_US}
_TIME_EDGES = (0, -1, I64_MAX, I64_MIN, I64_MAX - 1, -62_135_596_800_000_000,  # 0001-01-01
               253_402_300_799_999_999, 253_402_300_800_000_000, 1, None)       # 9999-12-31, +1 µs
_TIME_TEXT = ("2024-02-30", "", "now", "2024-01-01T25:00", "+10000-01-01", "2024-01-01T00:00+24:00",
              "1e10", "\udc80", "0001-01-01", "9999-12-31T23:59:59.999999-23:59", "2024-W01",
              "2024-01-01T00:00:00.1234567", " 2024-01-01 ", "２０２４-01-01", "2024-1-1")
_TIME_ENCODINGS = ("iso", "int_us", "timestamp_us", "timestamp_ns_utc", "timestamp_s", "date32",
                   "datetime", "float_us", "datetime64_ms")
_STRINGS = ("", None, "\udc80", "x" * 5000, "\x00", "é中文🙂", 7, b"bytes", float("nan"))


def _time_value(c, column: str, row: int):
    kind = c.choose(4, valid=0)
    if kind == 0:
        return _TIME_BASE[column] + c.choose(256, valid=None) * DAY_US + row
    if kind == 1:
        return pick(c, _TIME_EDGES, valid=None)
    if kind == 2:
        return pick(c, _TIME_TEXT, valid=None)
    return int.from_bytes(bytes(c.choose(256) for _ in range(8)), "little", signed=True)


def _encode_time(us, encoding: str):
    """A Python value of ``encoding`` for µs ``us`` (text passes through; a time that the
    encoding cannot hold stays an integer)."""
    if us is None or isinstance(us, str):
        return us
    try:
        if encoding == "iso":
            return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)).isoformat()
        if encoding == "datetime":
            return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)
    except OverflowError:  # beyond datetime's years 1..9999: the integer itself
        return us
    if encoding == "float_us":
        return float(us)
    if encoding == "datetime64_ms":
        return np.datetime64(us // 1000, "ms")
    return us


def _time_array(values: list, encoding: str):
    """An Arrow array of ``values`` (µs, None or text) in ``encoding``."""
    if any(isinstance(v, str) for v in values) or encoding in ("iso", "int_us", "datetime", "float_us"):
        return pa.array([_encode_time(v, encoding) for v in values])
    if encoding == "timestamp_us":
        return pa.array(values, pa.timestamp("us"))
    if encoding == "timestamp_ns_utc":
        return pa.array([None if v is None else v * 1000 for v in values], pa.timestamp("ns", "UTC"))
    if encoding == "timestamp_s":
        return pa.array([None if v is None else v // 1_000_000 for v in values], pa.timestamp("s"))
    if encoding == "date32":
        return pa.array([None if v is None else v // DAY_US for v in values], pa.date32())
    return pa.array([None if v is None else v // 1000 for v in values], pa.timestamp("ms"))


def _vector(c, row: int):
    kind = c.choose(10, valid=0)
    v = [(c.choose(256, valid=None) - 127.5) / 32 for _ in range(DIM)]
    if kind == 1:
        return v[:DIM - 1] if row % 2 else v + [1.0]
    if kind in (2, 3, 4, 5, 6):
        v[c.choose(DIM)] = (float("nan"), float("inf"), 0.0, 3e38, 1e-45)[kind - 2]
        if kind == 4:
            v = [0.0] * DIM
    if kind == 7:
        return [int(x) for x in v]
    if kind == 8:
        return None
    if kind == 9:
        return "1,2,3,4"
    return v


def _column_values(c, name: str, n: int, row0: int) -> tuple[list, str | None]:
    """``n`` values of column ``name`` and, for times, the encoding."""
    if name == "vector":
        return [_vector(c, i) for i in range(n)], None
    if name in _TIME_BASE:
        encoding = pick(c, _TIME_ENCODINGS, valid=None)
        return [_time_value(c, name, i) for i in range(n)], encoding
    values = []
    for i in range(n):
        good = c.choose(4, valid=(1, 2, 3)) != 0  # most values ordinary, some edge cases
        values.append(_ordinary(c, name, row0 + i) if good else _edge(c, name))
    return values, None


def _ordinary(c, name: str, row: int):
    if name == "id":
        return 100 + row
    if name == "reliability":
        return c.choose(256, valid=None) / 255
    if name == "fact_type":
        return pick(c, ("general", "news", "policy"), valid=None)
    if name == "stem_id":
        return f"doc-{c.choose(4, valid=None)}"
    if name in ("version", "supersedes"):
        return f"v{1 + c.choose(5, valid=None)}"
    if name == "deprecated":
        return bool(c.choose(2, valid=None))
    if name == "tenant":  # user metadata columns: a string, a number, a list of strings
        return pick(c, ("acme", "globex", "initech"), valid=None)
    if name == "level":
        return c.choose(256, valid=None)
    if name == "acl":
        return [pick(c, ("hr", "eng", "all"), valid=None) for _ in range(c.choose(3, valid=None))]
    return f"{name} {row}"


_EDGES = {
    "id": (0, 2**64 - 1, 2**64 - 2, 2**63, -1, 1.5, "7", None, 100),
    "reliability": (float("nan"), float("inf"), -0.0, 1.0000001, -1e-9, 2, None, "0.5", True, 10**30),
    "fact_type": ("", "unknown_type", "x" * 300, None, 5, "\udc80", "é", "general\x00"),
    "stem_id": ("", None, "\udc80", "d" * 5000, 3, "doc-0"),
    "version": ("", "v100000", "1.2.3.4.5", "vv", "v-1", "１", "99999.99999.99999.99999", None, 3),
    "deprecated": (2, "yes", None, float("nan"), -1),
    "tenant": ("", None, 5, "\udc80", ["a"], "x" * 300, True, {"a": 1}),
    "level": (2**63, -2**63 - 1, float("nan"), True, None, "7", 1.5, 2**64, float("inf")),
    "acl": ([], [None], None, "hr", [1, 2], [["x"]], ["a"] * 100, ["\udc80"]),
}


def _edge(c, name: str):
    return pick(c, _EDGES.get(name, _EDGES["version"] if name == "supersedes" else _STRINGS), valid=None)


# --------------------------------------------------------------------------- batches

#: columns a batch may carry: the schema's order, one name close to an engine column (a
#: typo, refused), then user metadata columns
FIELDS = ("id", "vector", "valid_from", "valid_to", "observed_at", "ingested_at", "retracted_at",
          "reliability", "fact_type", "stem_id", "version", "supersedes", "deprecated", "content",
          "title", "source", "modality", "valid_form", "tenant", "level", "acl")
REQUIRED = ("vector", "valid_from")
CONTAINERS = ("table", "record_batch", "dict_lists", "dict_numpy", "rows", "pandas")
ROW_COUNTS = (3, 1, 2, 5, 8, 17, 0)


def build_batch(c, row0: int = 0):
    """The rows of one ingest call, of the container the choices name; None when the
    choices describe something the container cannot hold (pyarrow or pandas refuse it:
    nothing the engine is given)."""
    container = pick(c, CONTAINERS, valid=None)
    n = pick(c, ROW_COUNTS, valid=(0, 1, 2, 3, 4, 5))
    cols: dict[str, tuple[list, str | None]] = {}
    for name in FIELDS:
        # 0 absent, 1 present, 2 present with one value too many
        valid = 1 if name in REQUIRED else (0 if name == "valid_form" else (0, 1))
        presence = c.choose(3, valid=valid)
        if presence:
            values, encoding = _column_values(c, name, n + (presence == 2), row0)
            cols[name] = (values, encoding)
    try:
        return _contain(container, cols)
    except (pa.ArrowException, ValueError, TypeError, OverflowError, UnicodeError):
        return None


def _contain(container: str, cols: dict):
    if container in ("table", "record_batch"):
        arrays = {name: _arrow_column(name, values, enc) for name, (values, enc) in cols.items()}
        return pa.table(arrays) if container == "table" else pa.record_batch(arrays)
    plain = {name: [_encode_time(v, enc) for v in values] if enc else values
             for name, (values, enc) in cols.items()}
    if container == "dict_lists":
        return plain
    if container == "dict_numpy":
        return {name: _numpy_column(name, values) for name, values in plain.items()}
    if container == "rows":
        n = max((len(v) for v in plain.values()), default=0)
        return [{k: v[i] for k, v in plain.items() if i < len(v)} for i in range(n)]
    import pandas as pd
    return pd.DataFrame(plain)


def _arrow_column(name: str, values: list, encoding: str | None):
    if encoding:
        return _time_array(values, encoding)
    if name == "vector" and all(isinstance(v, list) and len(v) == DIM for v in values):
        return pa.array(values, pa.list_(pa.float32(), DIM))
    return pa.array(values)


def _numpy_column(name: str, values: list):
    if name == "vector":
        return np.asarray(values, dtype=np.float32)
    if all(isinstance(v, np.datetime64) for v in values) and values:
        return np.asarray(values)
    return np.asarray(values, dtype=object if any(isinstance(v, str) or v is None for v in values) else None)


METRICS = ("cosine", "ip", "l2")


def read_case(c) -> tuple[str, int, list]:
    """A whole structured input: the engine's metric, the index of its decay policy (of
    two) and one or two batches (None for one the container cannot hold; the calls stop
    there)."""
    metric = pick(c, METRICS, valid=None)
    policy = c.choose(2, valid=None)
    batches = [build_batch(c, row0=10 * call) for call in range(1 + c.choose(2, valid=None))]
    return metric, policy, batches


def ipc_bytes(batch) -> bytes:
    """``batch`` (an Arrow table or record batch) as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write(batch)
    return sink.getvalue().to_pybytes()
