"""Time in chrono_engine: every instant is int64 microseconds since 1970-01-01T00:00:00Z.

This module is the one place where time values from users become those integers, and the
one place the constants of that representation are defined.
"""
from __future__ import annotations

import time as _time

import numpy as np

__all__ = ["OPEN_END", "MIN_TIME_US", "MAX_TIME_US", "US_PER_SECOND", "US_PER_DAY", "now_us"]

#: Stored end of an open interval (``valid_to`` / ``retracted_at`` null): the int64 maximum.
OPEN_END = int(np.iinfo(np.int64).max)
#: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z in µs since the epoch: the range of
#: every time a user may give (``OPEN_END`` aside).
MIN_TIME_US = -62_135_596_800_000_000
MAX_TIME_US = 253_402_300_799_999_999
US_PER_SECOND = 1_000_000
US_PER_DAY = 86_400 * US_PER_SECOND


def now_us() -> int:
    """The wall clock, in µs since the epoch."""
    return _time.time_ns() // 1000
