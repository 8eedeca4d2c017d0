"""What the three fuzz harnesses share: the rule that only a ChronoError may escape
(:func:`attempt`), the report of a broken invariant (:class:`Finding`), outcomes as coverage
for code atheris cannot see (:func:`outcome`), and starting libFuzzer with sensible defaults
and an optional triage mode (:func:`main`).

A harness imports chrono_engine inside :func:`instrumented` (so atheris records coverage
of the package's Python code), then calls :func:`main` with its one-input function.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import traceback
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path


class Finding(AssertionError):
    """An invariant the harness checks was broken (not an exception the engine raised)."""


class Refused:
    """What :func:`attempt` returns when the call raised a ChronoError: the error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def attempt(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)``, or a :class:`Refused` when it raises a ChronoError; any other
    exception propagates (and becomes the fuzzer's finding)."""
    from chrono_engine.errors import ChronoError
    try:
        return fn(*args, **kwargs)
    except ChronoError as e:
        return Refused(e)


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Import chrono_engine (and every module it imports) with atheris' coverage
    instrumentation; without atheris (make_corpus.py, a plain replay) import it as it is."""
    try:
        import atheris
    except ImportError:
        yield
        return
    with atheris.instrument_imports(include=["chrono_engine"]):
        yield


_PROBES: list[Callable[[], None]] = []


def outcome(key: str) -> None:
    """Tell the fuzzer which of 256 outcome classes ``key`` (an error's type and message,
    say) falls in, as if it were a branch of instrumented code. Coverage reaches only our
    Python code; the compiled core and pyarrow are not instrumented, so without this an
    input that fails deeper inside them looks the same as one refused at the first check,
    and libFuzzer would not keep it. A no-op without atheris."""
    if not _PROBES:
        try:
            import atheris
        except ImportError:
            return
        for i in range(256):  # one instrumented function each: 256 distinct edges
            scope: dict = {}
            exec(f"def probe_{i}():\n    return {i}\n", scope)  # noqa: S102 - fixed text
            _PROBES.append(atheris.instrument_func(scope[f"probe_{i}"]))
    key = re.sub(r"[0-9]+", "#", key)[:160]  # counts and offsets would make every key new
    _PROBES[zlib.crc32(key.encode("utf-8", "replace")) % 256]()


def main(test_one_input: Callable[[bytes], None], *, max_len: int, timeout_s: int = 20) -> None:
    """Run libFuzzer on ``test_one_input`` with the command line's arguments, adding
    ``-max_len`` and ``-timeout`` (a hang is a finding too) unless they were given.

    libFuzzer stops at the first uncaught exception or crash and writes the input to
    ``crash-<sha1>`` (``-artifact_prefix`` chooses the folder). Given only file names (no
    folder), the inputs are run once each: ``python fuzz/fuzz_X.py crash-1234`` replays.

    Triage: with ``CHRONO_FUZZ_COLLECT=<folder>`` an exception does not stop the run; the
    first input of each distinct finding (exception type and innermost frame) is written
    there with its traceback, and fuzzing goes on. A native crash still stops it."""
    import atheris
    collect = os.environ.get("CHRONO_FUZZ_COLLECT")
    if collect:
        test_one_input = _collecting(test_one_input, Path(collect))
    argv = list(sys.argv)
    for flag, value in (("-max_len", max_len), ("-timeout", timeout_s)):
        if not any(a.startswith(flag + "=") for a in argv):
            argv.insert(1, f"{flag}={value}")
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


def _collecting(test_one_input: Callable[[bytes], None], folder: Path) -> Callable[[bytes], None]:
    """``test_one_input`` that writes each new finding to ``folder`` and carries on."""
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[str] = {p.stem for p in folder.glob("*.txt")}

    def run(data: bytes) -> None:
        try:
            test_one_input(data)
        except Exception as e:  # noqa: BLE001 - triage mode records every finding
            frame = traceback.extract_tb(e.__traceback__)[-1]
            where = f"{type(e).__name__} {Path(frame.filename).name}:{frame.lineno}"
            key = hashlib.sha1(where.encode()).hexdigest()[:12]
            if key not in seen:
                seen.add(key)
                (folder / f"{key}.bin").write_bytes(data)
                (folder / f"{key}.txt").write_text(f"{where}\n{e!r}\n\n{traceback.format_exc()}")
                print(f"NEW FINDING {key}: {where}: {e!r}"[:300], file=sys.stderr, flush=True)
    return run
