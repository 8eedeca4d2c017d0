"""What the build says about itself, the SIMD decay kernels against their NumPy reference,
and ids kept only once they differ from rows. The interval index and the
freshness lists are checked in test_internal_indexes.py.

``chrono_engine._core`` is private; these tests call its stateless kernels on purpose
because the kernels have no public face of their own.
"""
from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import _core
from chrono_engine.errors import NotFoundError
from chrono_engine.decay import (Exponential, Gaussian, HalfLife, Linear, NoDecay, PowerLaw,
                                 Weibull, evaluate_spec)

TINY = 1e-300  # values below this are not compared (the kernels flush them towards 0)


# ----------------------------------------------------------------------------- build_info

def test_build_info_fields():
    info = ce.build_info()
    for key in ("compiler", "flags", "simd", "simd_available", "hnswlib_version", "baseline"):
        assert key in info, key
    assert isinstance(info["compiler"], str) and info["compiler"] and info["compiler"] != "unknown"
    assert info["hnswlib_version"] == "0.8.0"
    assert isinstance(info["simd_available"], list) and info["simd_available"]
    assert info["simd"] in info["simd_available"]
    # a fresh dict every call: callers may not mutate the build's record
    info["simd"] = "tampered"
    assert ce.build_info()["simd"] != "tampered"


def test_build_flags_are_portable():
    flags = ce.build_info()["flags"]
    assert isinstance(flags, str) and flags
    assert "-march=native" not in flags and "-mtune=native" not in flags
    for unsafe in ("-ffast-math", "-Ofast", "-funsafe-math-optimizations", "-ffinite-math-only"):
        assert unsafe not in flags, unsafe
    # the shipped baseline is named and is not newer than x86-64-v3 (docs/architecture.md)
    baseline = ce.build_info()["baseline"]
    m = re.search(r"-march=(\S+)", flags)
    if m:  # x86 builds pin -march; other architectures may not
        assert m.group(1) == baseline
        assert baseline in ("x86-64", "x86-64-v2", "x86-64-v3")
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686", "x86"):
        # elsewhere (aarch64): no -march, the compiler's default for the processor, named after it
        assert m is None and baseline == platform.machine(), (flags, baseline)


# ----------------------------------------------------------------------------- portable binary

#: instructions beyond x86-64-v2: every VEX / EVEX (AVX, AVX2, FMA, F16C, AVX-512) mnemonic
#: starts with "v"; BMI1/2, LZCNT and MOVBE by name. tzcnt is left out: GCC writes
#: __builtin_ctz as "rep bsf" for generic tuning, which objdump shows as tzcnt and every x86-64
#: CPU runs as bsf (the same result for the non-zero inputs ctz is defined on).
_WIDE = re.compile(r"^(v[a-z0-9]+|andn|bextr|blsi|blsr|blsmsk|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|lzcnt|movbe)$")


def _wide_instructions(path: str) -> tuple[dict, dict]:
    """Per function of the module (demangled), its instructions beyond x86-64-v2: those in
    the v3 / v4 kernel namespaces, and all the others."""
    import subprocess
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", path], capture_output=True, text=True,
                         check=True).stdout
    kernels, elsewhere, fn = {}, {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            fn = m.group(1)
            continue
        parts = line.split("\t")
        words = parts[1].split() if len(parts) > 1 else []
        if words and _WIDE.match(words[0]):
            into = kernels if re.search(r"\bchrono::v[34]::", fn or "") else elsewhere
            into.setdefault(fn, set()).add(words[0])
    return kernels, elsewhere


def test_no_instruction_beyond_the_baseline_outside_the_dispatched_kernels():
    """The module runs on any x86-64-v2 CPU: code that runs before the dispatcher chooses
    (module init, bindings, planner, hnswlib, libstdc++ templates) holds no AVX, FMA, BMI
    instruction; only the v3 / v4 kernels, which run after a CPU check, do. A template that
    the v3 file instantiated too and the linker kept from there would show up here."""
    import platform
    import shutil
    if platform.machine() not in ("x86_64", "AMD64") or ce.build_info()["baseline"] not in ("x86-64", "x86-64-v2"):
        pytest.skip("the check is for x86-64 builds whose baseline predates AVX")
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed")
    kernels, elsewhere = _wide_instructions(_core.__file__)
    assert not elsewhere, {f[:120]: sorted(m)[:8] for f, m in list(elsewhere.items())[:10]}
    # not vacuous: the module's symbols name its functions, and the v3 kernels are there
    assert any("chrono::v3::" in f for f in kernels), "no chrono::v3 function found (a stripped module?)"
    v3 = set().union(*(m for f, m in kernels.items() if "chrono::v3::" in f))
    assert any(m.startswith("vp") for m in v3), sorted(v3)[:20]  # AVX2 integer vectors (the int8 dots)


#: an AArch64 instruction on NEON vector registers: an operand such as v3.4s, v0.2d, {v1.16b}
_NEON_OPERAND = re.compile(r"(?:^|[\s,{])v\d+\.(?:2d|4s|8h|16b|2s|4h|8b)\b")


def test_aarch64_kernels_are_vectorised_with_neon():
    """An aarch64 build has no -march and no intrinsics of ours: GCC auto-vectorises the
    baseline kernels with NEON (Advanced SIMD, in every Armv8-A CPU). The decay loops and the
    fused score kernels hold instructions on vector registers (fmul v.2d, fcmge, bsl, ...);
    were they scalar (a flag or a loop change that stopped the vectoriser), this fails.
    scripts/aarch64_qemu.sh runs it under qemu with the cross binutils' objdump."""
    import shutil
    import subprocess
    if ce.build_info()["baseline"] != "aarch64":
        pytest.skip("the check is for aarch64 builds")
    tool = shutil.which("aarch64-linux-gnu-objdump") or shutil.which("objdump")
    if tool is None:
        pytest.skip("objdump (binutils) is not installed")
    p = subprocess.run([tool, "-d", "--no-show-raw-insn", "-C", _core.__file__], capture_output=True, text=True)
    if p.returncode != 0 or "<chrono::base::" not in p.stdout:
        pytest.skip(f"{tool} cannot disassemble this aarch64 module: {p.stderr.strip()[:200]}")
    per_fn, fn = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            fn = m.group(1)
            continue
        parts = line.split("\t")
        if fn and "chrono::base::" in fn and len(parts) > 2 and _NEON_OPERAND.search(parts[2]):
            per_fn[fn] = per_fn.get(fn, 0) + 1
    for kernel in ("decay_loop", "score_exp", "dot_qt_i8"):
        hits = {f: n for f, n in per_fn.items() if f"chrono::base::{kernel}" in f}
        assert hits and max(hits.values()) >= 20, (kernel, hits)


# ----------------------------------------------------------------------------- x86 code only under x86 guards

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
#: sources that only x86-64 builds compile (CMakeLists.txt adds them under if(_is_x86 ...))
X86_ONLY_SOURCES = ("cpp/src/kernels_v3.cpp", "cpp/src/kernels_v4.cpp")
_X86_INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"](?:\w*intrin\.h|cpuid\.h)[>\"]")
_X86_USE = re.compile(r"\b(?:_mm\d*_\w+|__m(?:64|128|256|512)[idh]?|__builtin_(?:cpu_supports|cpu_init|ia32_\w+))\b")
_X86_MACRO = re.compile(r"\b(?:__(?:AVX\w*|SSE\w*|x86_64|amd64|i386|FMA|BMI2?|F16C|POPCNT)__|_M_X64|_M_IX86)\b")


def _x86_condition(cond: str) -> bool:
    """True when an #if condition holds only on x86: each of its ||-alternatives names an x86
    macro (__AVX2__, __x86_64__, ...) that is not negated."""
    def positive(alt: str) -> bool:
        return bool(_X86_MACRO.search(re.sub(r"!\s*(?:defined\s*\(?\s*\w+\s*\)?|\w+)", "", alt)))
    return all(positive(alt) for alt in cond.split("||"))


def _x86_outside_guards(text: str) -> list[str]:
    """The lines of a C++ source that include an x86 intrinsic header (immintrin.h, ...,
    cpuid.h) or use an x86 intrinsic, vector type or CPU query (_mm256_add_ps, __m256i,
    __builtin_cpu_supports) outside every x86-only #if branch (an #else of one is not)."""
    stack, found = [], []  # per open #if: does the branch we are in hold only on x86?
    for no, line in enumerate(text.splitlines(), 1):
        d = re.match(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if d:
            kw, rest = d.group(1), d.group(2).split("//")[0]
            if kw in ("if", "ifdef"):
                stack.append(_x86_condition(rest))
            elif kw == "ifndef":
                stack.append(False)
            elif kw == "elif" and stack:
                stack[-1] = _x86_condition(rest)
            elif kw == "else" and stack:
                stack[-1] = False
            elif kw == "endif" and stack:
                stack.pop()
            continue
        code = line.split("//")[0]
        if (_X86_INCLUDE.match(line) or _X86_USE.search(code)) and not any(stack):
            found.append(f"{no}: {line.strip()}")
    return found


def test_x86_intrinsics_only_in_x86_guarded_code():
    """The core builds on any architecture (aarch64: scripts/aarch64_qemu.sh): x86 intrinsic
    headers, intrinsics and CPU queries appear only in sources that only x86 builds compile,
    or inside #if branches that hold only on x86 (__AVX2__, __x86_64__, ...)."""
    if not (ROOT / "CMakeLists.txt").is_file() or not (ROOT / "cpp").is_dir():
        pytest.skip("the C++ sources are not beside these tests")
    cmake = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    # the x86-only sources are compiled only inside if(_is_x86 ...) blocks
    depth, x86_depth = 0, None
    for line in cmake.splitlines():
        s = line.strip()
        if re.match(r"if\s*\(", s):
            depth += 1
            if x86_depth is None and re.match(r"if\s*\(\s*_is_x86\b", s):
                x86_depth = depth
        elif re.match(r"endif\s*\(", s):
            if x86_depth == depth:
                x86_depth = None
            depth -= 1
        for src in X86_ONLY_SOURCES:
            if src in s:
                assert x86_depth is not None, f"CMakeLists.txt compiles {src} outside if(_is_x86 ...): {s}"
    offenders = {}
    for path in sorted((ROOT / "cpp").rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.suffix not in (".cpp", ".hpp", ".h", ".cc") or rel in X86_ONLY_SOURCES:
            continue
        bad = _x86_outside_guards(path.read_text(encoding="utf-8"))
        if bad:
            offenders[rel] = bad[:5]
    assert not offenders, offenders
    # not vacuous: the guarded kernels do use intrinsics, and the check sees unguarded ones
    assert _X86_USE.search((ROOT / "cpp/src/kernels_impl.hpp").read_text(encoding="utf-8"))
    assert _x86_outside_guards("#include <immintrin.h>\nint f();\n") == ["1: #include <immintrin.h>"]
    assert _x86_outside_guards("#if defined(__AVX2__)\n__m256i a;\n#else\n__m256i b;\n#endif\n") == ["4: __m256i b;"]
    assert _x86_outside_guards("#if defined(__x86_64__) || defined(__aarch64__)\n"
                               "bool c = __builtin_cpu_supports(\"avx2\");\n#endif\n") != []
    assert _x86_outside_guards("#ifndef __AVX2__\n_mm_add_ps(a, b);\n#endif\n") != []
    assert _x86_outside_guards("#if defined(__AVX2__) && !defined(__AVX512F__)\n#include <immintrin.h>\n"
                               "#elif defined(__aarch64__)\n#include <arm_neon.h>\n#endif\n") == []


def test_the_baseline_variant_pinned_answers_like_the_dispatched_one(tmp_path):
    """CHRONO_SIMD=<baseline> pins the dispatcher to the baseline kernels (what a CPU without
    AVX2 runs): a process so pinned reports it and answers a search (certified and approximate)
    with the same ids and scores as the dispatched variant."""
    import json
    import subprocess
    import sys
    base = ce.build_info()["baseline"]
    script = (
        "import json, sys, numpy as np, chrono_engine as ce\n"
        "rng = np.random.default_rng(5); n, d = 3000, 48\n"
        "eng = ce.Engine(dim=d, decay=ce.HalfLife(200), threads=1)\n"
        "t0 = np.datetime64('2020-01-01', 'us')\n"
        "eng.ingest({'vector': rng.normal(size=(n, d)).astype(np.float32),"
        " 'valid_from': t0 + (rng.integers(0, 1500, n) * 86400 * 10**6).astype('timedelta64[us]'),"
        " 'tenant': rng.choice(['a', 'b', 'c'], n)})\n"
        "q = rng.normal(size=(6, d)).astype(np.float32)\n"
        "out = {'simd': ce.build_info()['simd']}\n"
        "for exact in (True, False):\n"
        "    r = eng.search_batch(q, 10, mode='as_of', as_of=np.full(6, t0 + np.timedelta64(1000 * 86400 * 10**6, 'us')),"
        " exact=exact, where={'tenant': {'$ne': 'c'}}, columns=[])\n"
        "    out[str(exact)] = [r.column('id').to_pylist(), r.column('score').to_pylist()]\n"
        "print(json.dumps(out))\n")
    import os
    runs = {}
    for pin in (None, base):
        env = {k: v for k, v in os.environ.items() if k != "CHRONO_SIMD"}
        if pin:
            env["CHRONO_SIMD"] = pin
        # not from the checkout: the package as this suite imports it (installed, or PYTHONPATH's)
        p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                           cwd=str(tmp_path))
        assert p.returncode == 0, p.stderr[-2000:]
        runs[pin] = json.loads(p.stdout.strip().splitlines()[-1])
    assert runs[base]["simd"] == base
    assert runs[None]["simd"] == ce.build_info()["simd"]
    for exact in ("True", "False"):
        ids_a, sc_a = runs[None][exact]
        ids_b, sc_b = runs[base][exact]
        assert ids_a == ids_b
        np.testing.assert_allclose(sc_a, sc_b, rtol=1e-12, atol=0)


def test_unknown_kernel_variant_is_refused():
    with pytest.raises(ValueError, match="not available"):
        _core.decay_eval(np.zeros(3), np.array([1.0, 0.1, 0.0, 1.0, 0.0]), "x86-64-v99")


# ----------------------------------------------------------------------------- decay kernels

VARIANTS = [""] + list(ce.build_info()["simd_available"])  # "" = the dispatched one

FAMILY_SPECS = {
    "none": NoDecay(),
    "exponential": Exponential(half_life=30.0),
    "exponential_offset_hours_sym": Exponential(beta=0.2, offset=5.0, unit="hours", symmetric=True),
    "half_life": HalfLife(365.0),
    "gaussian": Gaussian(sigma=40.0),
    "gaussian_offset_sym": Gaussian(half_life=3.0, offset=2.0, symmetric=True),
    "linear": Linear(rate=0.004),
    "linear_offset_hours": Linear(scale=48.0, offset=6.0, decay=0.3, unit="hours"),
    "power_law": PowerLaw(1.5),
    "power_law_seconds": PowerLaw(0.05, unit="seconds"),
    "weibull": Weibull(shape=2.0, scale=90.0),
    "weibull_sublinear_sym": Weibull(shape=0.4, scale=500.0, symmetric=True),
}


def _edge_ages(rng: np.random.Generator) -> np.ndarray:
    """Random ages (days) with negative, zero, tiny, huge, infinite and NaN values."""
    return np.concatenate([
        rng.uniform(-2_000.0, 20_000.0, 3000),
        rng.lognormal(0.0, 6.0, 2000),           # 1e-8 .. 1e8 days
        -rng.lognormal(0.0, 6.0, 300),
        np.array([0.0, -0.0, -1.0, 1e-300, 1e-12, 0.5, 1.0, 700.0, 745.0, 1e6, 1e15,
                  1e300, -1e300, np.finfo(np.float64).max, np.inf, -np.inf, np.nan, np.nan]),
    ])


def _assert_close_to_reference(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Relative 1e-12, NaN where the reference is NaN, values below 1e-300 ignored.

    In the deep tail exp(-x) is ill-conditioned (a relative error e in x becomes x·e in
    exp(-x)), so beyond D < e^-100 the tolerance grows with |ln D|: it allows the same
    error in the exponent, not a looser kernel.
    """
    assert got.shape == ref.shape and got.dtype == np.float64
    nan_ref = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan_ref), f"{what}: NaN pattern differs"
    ok = ~nan_ref
    g, r = got[ok], ref[ok]
    small = (np.abs(r) < TINY) & (np.abs(g) < TINY)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(g - r) / np.abs(r)
        tol = 1e-12 * np.maximum(1.0, np.abs(np.log(np.abs(r))) / 100.0)
    bad = ~small & ~(rel <= tol)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        raise AssertionError(f"{what}: {bad.sum()} values differ, e.g. "
                             + ", ".join(f"got {g[j]!r} want {r[j]!r}" for j in i))
    assert ((g >= 0.0) & (g <= 1.0)).all(), f"{what}: decay outside [0, 1]"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", sorted(FAMILY_SPECS))
def test_decay_kernel_matches_reference(variant, name):
    spec = FAMILY_SPECS[name]._kernel_spec()
    ages = _edge_ages(np.random.default_rng(zlib.crc32(name.encode())))
    got = _core.decay_eval(ages, np.array(spec[:4] + (float(spec[4]),)), variant)
    _assert_close_to_reference(got, evaluate_spec(spec, ages), f"{name} [{variant or 'dispatched'}]")


@pytest.mark.parametrize("variant", VARIANTS)
def test_decay_kernel_random_parameters_every_family(variant):
    rng = np.random.default_rng(12)
    ages = _edge_ages(rng)
    for trial in range(120):
        code = trial % 6  # every family code 0..5
        p0 = float(np.exp(rng.uniform(np.log(1e-3), np.log(50.0))))
        p1 = (float(np.exp(rng.uniform(np.log(1e-2), np.log(1e3)))) if code == 5
              else float(rng.choice([0.0, rng.uniform(0.0, 100.0)])))
        scale = float(rng.choice([1.0, 24.0, 86_400.0]))
        symmetric = bool(rng.integers(0, 2))
        spec = (code, p0, p1, scale, symmetric)
        got = _core.decay_eval(ages, np.array([code, p0, p1, scale, float(symmetric)]), variant)
        _assert_close_to_reference(got, evaluate_spec(spec, ages), f"spec {spec} [{variant or 'dispatched'}]")


@pytest.mark.parametrize("variant", VARIANTS)
def test_decay_kernel_variants_agree_and_keep_shape(variant):
    ages = np.random.default_rng(3).uniform(-10, 5000, (7, 11))
    spec = np.array(Weibull(shape=1.3, scale=200.0)._kernel_spec()[:4] + (0.0,))
    got = _core.decay_eval(ages, spec, variant)
    assert got.shape == (7, 11)
    base = _core.decay_eval(ages, spec, "")
    np.testing.assert_array_equal(got, base)  # bit for bit: the build does not fuse a * b + c
    assert _core.decay_eval(np.zeros(0), spec, variant).shape == (0,)


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_every_kernel_variant_computes_the_same_bits(variant):
    """Every variant of this build rounds the same operations in the same order
    (``-ffp-contract=off``, fixed-lane reductions): decay values of every family, float
    and int8 dot products, equal bit for bit to the first (baseline) variant's.
    ``scripts/compare_builds.py`` compares whole builds of other instruction set levels."""
    base = VARIANTS[1]
    rng = np.random.default_rng(77)
    ages = _edge_ages(rng)
    for name, fam in sorted(FAMILY_SPECS.items()):
        spec = fam._kernel_spec()
        spec = np.array(spec[:4] + (float(spec[4]),))
        np.testing.assert_array_equal(_core.decay_eval(ages, spec, variant), _core.decay_eval(ages, spec, base),
                                      err_msg=name)
    for d in (1, 15, 16, 17, 100, 384):
        a, b = rng.normal(size=d).astype(np.float32), rng.normal(size=d).astype(np.float32)
        assert _core.dot(a, b, variant) == _core.dot(a, b, base)
        C = rng.integers(-127, 128, (9, d), dtype=np.int8)
        Q = rng.normal(size=(5, d)).astype(np.float32)
        np.testing.assert_array_equal(_core.dot_qt_i8(C, Q, variant), _core.dot_qt_i8(C, Q, base))
        which = np.array([4, 0, 2], np.uint32)
        np.testing.assert_array_equal(_core.dot_i8_some(C[0], Q, which, variant),
                                      _core.dot_i8_some(C[0], Q, which, base))


@pytest.mark.parametrize("variant", VARIANTS)
def test_decay_kernel_subnormal_ages(variant):
    ages = np.array([5e-324, 1e-310, 2e-308])
    spec = (5, 0.01, 1.0, 1.0, False)
    got = _core.decay_eval(ages, np.array([5, 0.01, 1.0, 1.0, 0.0]), variant)
    _assert_close_to_reference(got, evaluate_spec(spec, ages), f"subnormal [{variant}]")


@pytest.mark.parametrize("bad", [[1.0, 0.1, 0.0, 1.0], [6.0, 0.1, 0.0, 1.0, 0.0], [1.5, 0.1, 0.0, 1.0, 0.0],
                                 [-1.0, 0.1, 0.0, 1.0, 0.0]])
def test_decay_kernel_rejects_bad_specs(bad):
    with pytest.raises(ValueError):
        _core.decay_eval(np.zeros(2), np.array(bad))


def test_ids_stored_only_once_they_differ_from_rows():
    """Ids equal to rows are not stored; the first other id materialises the id map, and
    ids (not rows) still break score ties."""
    eng = ce.Engine(8, metric="l2", M=8, ef_construction=32, threads=1)
    v = np.ones((3, 8), np.float32)  # identical vectors: every score ties
    batch = {"vector": v, "valid_from": ["2024-01-01"] * 3}
    assert list(eng.ingest(batch)) == [0, 1, 2]
    dense = eng.memory()["metadata"]
    assert list(eng.ingest({**batch, "id": np.array([10, 3, 7], np.uint64)})) == [10, 3, 7]
    assert list(eng.ingest(batch)) == [11, 12, 13]
    np.testing.assert_array_equal(eng.rows_of([0, 1, 2, 10, 3, 7, 11, 12, 13]), np.arange(9))
    np.testing.assert_array_equal(eng.columns()["id"], [0, 1, 2, 10, 3, 7, 11, 12, 13])
    assert eng.memory()["metadata"] > dense  # the id map now exists
    with pytest.raises(NotFoundError, match="unknown id 4"):
        eng.rows_of([4])
    res = eng.search(v[0], k=9, mode="all", as_of="2025-01-01")
    assert res.column("id").to_pylist() == [0, 1, 2, 3, 7, 10, 11, 12, 13]
