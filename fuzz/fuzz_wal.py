"""Fuzz the write-ahead log: a store's log damaged by a short program of cuts, bit flips,
byte writes and appended bytes, then opened.

    python fuzz/fuzz_wal.py -max_total_time=60 fuzz/corpus/wal

At start-up a store is saved and then given acknowledged writes that go to its log
(ingests, a supersede, a retraction, a deprecation; fsync "call"), and the store's contents
after each acknowledged prefix of them are recorded. Input: byte 0's low bit chooses a
read-only or a writable open; the rest is read four bytes at a time, each an operation on
the log's bytes: ``op % 4`` = 0 flip bit ``b3 % 8`` of byte ``u16 % len``, 1 cut the log at
``u16 % (len + 1)``, 2 write ``b3`` at byte ``u16 % len``, 3 append ``b3``.

Findings: any exception from Engine.open but a ChronoError; a store that opens with fewer
acknowledged writes than were made (every acknowledged record is covered by the log's mark,
so losing one silently is the failure this harness exists to find), or with contents that
no acknowledged prefix had; a refused writable open that changed the log; a writable open
whose store, closed and opened again, differs.
"""
from __future__ import annotations

import atexit
import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np

from _harness import Finding, Refused, attempt, instrumented, main, outcome

with instrumented():
    import chrono_engine as ce

from _store import DIM, build_store  # noqa: E402 (after the instrumented import)

_TMP = Path(tempfile.mkdtemp(prefix="chrono-fuzz-wal-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_STORE = _TMP / "store"


def contents(eng: ce.Engine) -> tuple:
    cols = eng.columns()
    return (len(eng), tuple(eng.stems), {k: v.tobytes() for k, v in cols.items()}, eng.vectors().tobytes())


def _prepare() -> tuple[list, Path, bytes]:
    """The store, its states after each acknowledged prefix of its log, the log's bytes."""
    build_store(_STORE)
    rng = np.random.default_rng(11)
    states = [contents(ce.Engine.open(_STORE, read_only=True))]
    with ce.Engine.open(_STORE, threads=1) as eng:
        writes = [lambda: eng.ingest({"vector": rng.normal(size=(2, DIM)).astype(np.float32),
                                      "valid_from": ["2024-01-01", "2024-02-01"]}),
                  lambda: eng.supersede("doc-2", {"vector": rng.normal(size=(1, DIM)).astype(np.float32)},
                                        effective_at="2024-03-01", version="v10"),
                  lambda: eng.retract([5], at="2030-01-01"),
                  lambda: eng.deprecate([6], effective_at="2021-01-01"),
                  lambda: eng.ingest({"vector": rng.normal(size=(1, DIM)).astype(np.float32),
                                      "valid_from": ["2025-01-01"], "content": ["late"]})]
        for write in writes:
            write()
            states.append(contents(ce.Engine.open(_STORE, read_only=True)))
    (log,) = _STORE.glob("snap-*/log.wal")
    return states, log, log.read_bytes()


_STATES, _LOG, _DATA = _prepare()


def damaged(program: bytes) -> bytes:
    b = bytearray(_DATA)
    for at in range(0, len(program) - 3, 4):
        op, pos, value = program[at] % 4, struct.unpack_from("<H", program, at + 1)[0], program[at + 3]
        if op == 0 and b:
            b[pos % len(b)] ^= 1 << (value % 8)
        elif op == 1:
            del b[pos % (len(b) + 1):]
        elif op == 2 and b:
            b[pos % len(b)] = value
        elif op == 3:
            b.append(value)
    return bytes(b)


def judge(eng: ce.Engine, how: str) -> None:
    got = contents(eng)
    if got == _STATES[-1]:
        return
    if got in _STATES:
        raise Finding(f"{how}: opened with {_STATES.index(got)} of {len(_STATES) - 1} acknowledged writes, "
                      "no error")
    raise Finding(f"{how}: opened with contents that no acknowledged prefix had")


def test_one_input(data: bytes) -> None:
    writable = bool(data[:1] and data[0] & 1)
    bad = damaged(data[1:])
    _LOG.write_bytes(bad)
    try:
        eng = attempt(ce.Engine.open, _STORE, read_only=not writable, threads=1)
        if isinstance(eng, Refused):
            outcome(f"{writable} {type(eng.error).__name__} {str(eng.error).replace(str(_STORE), '')}")
            if writable and _LOG.read_bytes() != bad:
                raise Finding("a refused writable open changed the log")
            return
        outcome(f"{writable} opened {len(bad) - len(_DATA)}")
        judge(eng, "opened")
        if writable:
            eng.close()
            judge(ce.Engine.open(_STORE, read_only=True), "opened again after a writable open")
    finally:
        _LOG.write_bytes(_DATA)


if __name__ == "__main__":
    main(test_one_input, max_len=64)
