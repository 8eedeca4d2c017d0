"""The sdist, built from a developer's tree: the tracked files plus the leftovers a build
leaves (objects under build/, among them build/<tag>/cpp/..., a compiled module in the
package, an old dist/), stays under 2 MB, holds none of the leftovers, and holds every file
a wheel build needs. pyproject's [tool.scikit-build] sdist.include / sdist.exclude are
anchored for this: an unanchored "cpp" once matched build/**/cpp and took 29 MB of objects.

The sdist is built by the build backend's own PEP 517 hook (what `python -m build --sdist`
and pip call) in a copy of the tracked files, in a subprocess."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("scikit_build_core.build",
                    reason="scikit-build-core is not installed (the [test] extra installs it)")

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 2 * 1024 * 1024
#: what a wheel build reads besides the tracked files under these folders
NEEDED = ("pyproject.toml", "CMakeLists.txt", "LICENSE", "README.md")
NEEDED_FOLDERS = ("chrono_engine/", "cpp/", "cmake/")
#: build leftovers (path, bytes of random data)
LEFTOVERS = {
    "build/x/CMakeFiles/_core.dir/cpp/big.o": 5 * 1024 * 1024,
    "build/cp311-cp311-linux_x86_64/cpp/CMakeFiles/_core.dir/bindings/module.cpp.o": 1024 * 1024,
    "build/cp311-cp311-linux_x86_64/_deps/pybind11-3.1.0/include/pybind11/pybind11.h": 4096,
    "chrono_engine/_core.fake.so": 1024 * 1024,
    "chrono_engine/_core.cpython-311-x86_64-linux-gnu.so": 512 * 1024,
    "dist/chrono_engine-0.0.0.tar.gz": 512 * 1024,
    "chrono_engine/__pycache__/engine.cpython-311.pyc": 4096,
}


def _tracked() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the tracked files cannot be listed")
    run = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if run.returncode != 0 or not run.stdout:
        pytest.skip("the tests do not sit in a git checkout: the tracked files cannot be listed")
    return [p for p in run.stdout.decode("utf-8").split("\0") if p and (ROOT / p).is_file()]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    tracked = _tracked()
    src = tmp_path_factory.mktemp("tree")
    for rel in tracked:
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst)
    rng = random.Random(55)
    for rel, size in LEFTOVERS.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))  # random: the archive cannot shrink it
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKBUILD")}
    run = subprocess.run(
        [sys.executable, "-c",
         "import sys; from scikit_build_core.build import build_sdist; print(build_sdist(sys.argv[1]))",
         str(out)], cwd=src, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    name = run.stdout.strip().splitlines()[-1]
    path = out / name
    with tarfile.open(path) as tar:
        members = [m.name for m in tar.getmembers() if m.isfile()]
    top = members[0].split("/", 1)[0]
    inner = sorted(m.split("/", 1)[1] for m in members if "/" in m)
    return path, top, inner, tracked


def test_sdist_is_small(sdist):
    path, *_ = sdist
    size = path.stat().st_size
    assert size <= LIMIT, f"{path.name}: {size:,} bytes (limit {LIMIT:,})"


def test_sdist_holds_no_build_leftover(sdist):
    _, top, inner, _ = sdist
    assert top.startswith("chrono_engine-"), top
    leftovers = [m for m in inner
                 if m.startswith(("build/", "dist/", ".venv/")) or "__pycache__" in m
                 or m.endswith((".so", ".o", ".pyc"))]
    assert not leftovers, leftovers[:20]


def test_sdist_holds_what_a_wheel_build_reads(sdist):
    _, _, inner, tracked = sdist
    have = set(inner)
    needed = [p for p in tracked if p.startswith(NEEDED_FOLDERS)] + list(NEEDED)
    missing = [p for p in needed if p not in have]
    assert not missing, missing[:20]
    assert "PKG-INFO" in have
