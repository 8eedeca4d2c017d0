"""The CPU check before the compiled core loads (chrono_engine/_cpu.py): a CPU below the
core's baseline gets an ImportError naming the missing features, not SIGILL."""
from __future__ import annotations

import importlib.machinery
import json

import pytest

from chrono_engine import _cpu

V2_FLAGS = "fpu cx8 sse sse2 ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm"
V1_FLAGS = "fpu cx8 sse sse2 lahf_lm"  # an old Opteron: no SSSE3, SSE4, POPCNT, CX16


def _files(tmp_path, baseline, flags):
    native = tmp_path / "_native.json"
    native.write_text(json.dumps({"baseline": baseline, "processor": "x86_64"}))
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    return native, str(cpuinfo)


def test_a_cpu_below_the_baseline_is_named_before_the_core_loads(tmp_path):
    native, cpuinfo = _files(tmp_path, "x86-64-v2", V1_FLAGS)
    with pytest.raises(ImportError, match=r"built for x86-64-v2, and this CPU lacks cx16, popcnt, sse4_1, "
                                          r"sse4_2, ssse3: .*Illegal instruction.*CHRONO_ARCH=x86-64"):
        _cpu.check(native, cpuinfo, machine="x86_64")


@pytest.mark.parametrize("baseline, flags", [
    ("x86-64-v2", V2_FLAGS), ("x86-64", V1_FLAGS), ("x86-64-v3", V2_FLAGS + " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"),
    ("aarch64", ""),  # a level this check does not know: not judged
])
def test_a_cpu_at_or_above_the_baseline_passes(tmp_path, baseline, flags):
    native, cpuinfo = _files(tmp_path, baseline, flags)
    _cpu.check(native, cpuinfo, machine="x86_64")


def test_v3_needs_its_whole_level(tmp_path):
    native, cpuinfo = _files(tmp_path, "x86-64-v3", V2_FLAGS + " avx avx2 fma")
    with pytest.raises(ImportError, match="lacks abm, bmi1, bmi2, f16c, movbe, xsave"):
        _cpu.check(native, cpuinfo, machine="x86_64")


def test_unknown_facts_are_not_judged(tmp_path):
    native, cpuinfo = _files(tmp_path, "x86-64-v2", V1_FLAGS)
    _cpu.check(tmp_path / "absent.json", cpuinfo, machine="x86_64")  # no record of the baseline
    _cpu.check(native, str(tmp_path / "no-cpuinfo"), machine="x86_64")  # not Linux
    _cpu.check(native, cpuinfo, machine="aarch64")  # another architecture
    (tmp_path / "bad.json").write_text("{not json")
    _cpu.check(tmp_path / "bad.json", cpuinfo, machine="x86_64")


def test_this_machine_runs_its_own_build():
    """The check passes here (the suite is running on this CPU), and the flags it reads
    are this machine's (Linux)."""
    _cpu.check()
    flags = _cpu.cpu_flags()
    if flags is not None:
        assert "sse2" in flags


def test_a_checkout_without_its_core_says_how_to_run_the_installed_package(tmp_path):
    pkg = tmp_path / "chrono_engine"
    pkg.mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'chrono_engine'\n")
    with pytest.raises(ImportError, match=r"source checkout .* no compiled core .*`pytest` \(its console script"):
        _cpu.core_present(pkg)
    (pkg / "_core.cpython-299-x86_64-linux-gnu.so").write_bytes(b"")  # another Python's build
    with pytest.raises(ImportError, match="no compiled core"):
        _cpu.core_present(pkg)
    mine = pkg / f"_core{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    mine.write_bytes(b"")
    _cpu.core_present(pkg)  # this interpreter's module is there: nothing to say
    mine.unlink()
    (tmp_path / "pyproject.toml").unlink()
    _cpu.core_present(pkg)  # not a checkout: Python's own ImportError follows
