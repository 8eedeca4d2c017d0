"""Before the compiled core loads: can this CPU run the instruction set it was built for?

The core's baseline code is built for one x86-64 level (``CHRONO_ARCH``, x86-64-v2 by
default: SSE4.2 and POPCNT) and its wider kernels are chosen at run time. On a CPU below
the baseline, loading the module would kill the process with SIGILL ("Illegal
instruction") and no word of why; this check turns that into an ImportError naming the
missing features. The build writes its baseline beside the module (``_native.json``, from
CMakeLists.txt); a tree without it (a developer's in-place build) is not checked.
"""
from __future__ import annotations

import json
import platform
from pathlib import Path

_V2 = frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"})
#: the CPU flags (as Linux's /proc/cpuinfo names them) each x86-64 level needs; "abm" is LZCNT
REQUIRED = {
    "x86-64": frozenset(),
    "x86-64-v2": _V2,
    "x86-64-v3": _V2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
}


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset | None:
    """The first processor's flags from ``cpuinfo`` (None where it cannot be read: not Linux)."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        return None
    return None


def missing(baseline: str, flags: frozenset) -> list[str]:
    """The features of x86-64 level ``baseline`` that ``flags`` lack (sorted; [] for a level
    this module does not know, which it does not judge)."""
    return sorted(REQUIRED.get(baseline, frozenset()) - flags)


def check(native: Path | None = None, cpuinfo: str = "/proc/cpuinfo", machine: str | None = None) -> None:
    """Raise ImportError when this CPU lacks a feature of the core's baseline; return quietly
    when it has them all, or when any of the facts cannot be read."""
    native = Path(__file__).with_name("_native.json") if native is None else native
    try:
        baseline = json.loads(native.read_text(encoding="utf-8"))["baseline"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return
    flags = cpu_flags(cpuinfo)
    if flags is None:
        return
    lacks = missing(str(baseline), flags)
    if lacks:
        raise ImportError(
            f"chrono_engine's compiled core was built for {baseline}, and this CPU lacks {', '.join(lacks)}: "
            f"loading it would stop the process with 'Illegal instruction'. Build it for this CPU from the "
            f"source: pip install --no-binary chrono_engine chrono_engine -C cmake.define.CHRONO_ARCH=x86-64")


def core_present(package: Path | None = None) -> None:
    """Raise an ImportError that says what to do when ``chrono_engine`` is imported from a
    source checkout that holds no compiled core (``python -m pytest`` or ``python`` run in
    the checkout put it before the installed package on ``sys.path``)."""
    import importlib.machinery
    package = Path(__file__).parent if package is None else package
    if any((package / f"_core{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        return  # this interpreter's build of the core (another Python's does not count)
    if not (package.parent / "pyproject.toml").is_file():
        return  # an installed package missing its module: Python's own error says enough
    raise ImportError(
        f"chrono_engine was imported from its source checkout ({package}), which holds no compiled core "
        f"(chrono_engine._core). Run the installed package instead: `pytest` (its console script; "
        f"`python -m pytest` and `python` started in the checkout put the checkout first on sys.path), "
        f"or from another directory; `pip install .` builds and installs it.")
