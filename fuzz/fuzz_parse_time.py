"""Fuzz the time language: mutated text into ``ce.parse_time``,
``ce.parse_temporal_intent`` and ``ce.ground``; anything but a ChronoError escaping is a
finding.

    python fuzz/fuzz_parse_time.py -max_total_time=60 fuzz/corpus/parse_time

Input: byte 0 chooses the function (bit 7: ``ground``, with the ``now`` as its document date
when bit 0 is set and none otherwise; else bit 0: intent or parse_time), the ``now`` (bits
1-3) and the ``tz`` (bits 4-6) from fixed lists (so every finding replays exactly); the rest is the text, UTF-8, where bytes that are not UTF-8
become lone surrogates (``surrogateescape``), which a ``str`` can hold.
"""
from __future__ import annotations

from _harness import Finding, instrumented, main

with instrumented():
    import chrono_engine as ce

# now values at the edges of the calendar as well as ordinary ones; naive = wall clock in tz
NOWS = ("2025-06-18T12:00:00", "2024-02-29T23:59:59.999999", "2000-01-01T00:00:00",
        "1970-01-01T00:00:00", "9999-12-31T12:00:00", "0001-01-01T00:00:00")
TZS = (None, "UTC", "Asia/Shanghai", "America/New_York", "Pacific/Kiritimati",
       "America/St_Johns", "Australia/Lord_Howe", "Pacific/Pago_Pago")
MODES = ("latest", "as_of", "window")


def decode(data: bytes):
    """(function, now, tz, text) of one input."""
    head = data[0] if data else 0
    now = NOWS[(head >> 1 & 7) % len(NOWS)]
    tz = TZS[(head >> 4 & 7) % len(TZS)]
    if head & 0x80:
        return ce.ground, (now if head & 1 else None), tz, data[1:].decode("utf-8", "surrogateescape")
    fn = ce.parse_temporal_intent if head & 1 else ce.parse_time
    return fn, now, tz, data[1:].decode("utf-8", "surrogateescape")


def test_one_input(data: bytes) -> None:
    """One input: the call may return or raise a ChronoError; the result must be well formed."""
    fn, now, tz, text = decode(data)
    try:
        out = ce.ground(text, now, tz=tz) if fn is ce.ground else fn(text, now=now, tz=tz)
    except ce.errors.ChronoError:
        return
    if fn is ce.ground:
        for f in out:
            b, e = f.span
            if not (0 <= b < e <= len(text) and text[b:e] == f.text):
                raise Finding(f"ground gave a span outside its text {f!r}")
            if f.start is None and f.end is None or (f.start is not None and f.end is not None
                                                     and not f.start < f.end):
                raise Finding(f"ground gave an empty or unplaced fact {f!r}")
    elif fn is ce.parse_time:
        for e in out:
            if e.start is not None and e.end is not None and not e.start < e.end:
                raise Finding(f"parse_time gave an empty range {e!r}")
    elif out.mode not in MODES:
        raise Finding(f"parse_temporal_intent gave mode {out.mode!r}")


if __name__ == "__main__":
    main(test_one_input, max_len=512, timeout_s=10)
