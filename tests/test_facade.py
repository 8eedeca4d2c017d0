"""The package's face: every name in ``__all__`` resolves (the lazy ones too) and shows in
``dir(chrono_engine)``; the version is written once and is what the installed
distribution says."""
from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import chrono_engine as ce

ROOT = Path(__file__).resolve().parent.parent


def test_every_public_name_resolves_and_is_listed_by_dir():
    assert len(set(ce.__all__)) == len(ce.__all__)
    listed = dir(ce)
    for name in ce.__all__:
        assert name in listed, name
        assert getattr(ce, name) is not None, name
    assert {"tkg", "verify", "embed", "timelang", "errors"} <= set(ce.__all__)
    assert ce.tkg.load is not None and ce.stl is ce.verify.stl
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ce.nope  # noqa: B018


@pytest.mark.slow
def test_lazy_layers_are_not_imported_with_the_package(tmp_path):
    code = ("import sys, chrono_engine as ce; names = dir(ce); "
            "print(sorted(m for m in ('numba', 'onnx', 'onnxruntime', 'chrono_engine.tkg', "
            "'chrono_engine.verify', 'chrono_engine.embed') if m in sys.modules), 'tkg' in names)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)  # outside the checkout: the installed package, not the source tree
    assert out.returncode == 0 and out.stdout.strip() == "[] True", out.stderr


def test_version_matches_the_installed_distribution():
    try:
        installed = importlib.metadata.version("chrono_engine")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("chrono_engine is not installed as a distribution (run from a source tree)")
    assert ce.__version__ == installed


def test_version_is_written_once():
    from chrono_engine import _version
    assert ce.__version__ == _version.__version__
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("no pyproject.toml beside the tests")
    text = pyproject.read_text(encoding="utf-8")
    project = text[text.index("[project]"):text.index("\n[", text.index("[project]") + 1)]
    assert not re.search(r"^version\s*=", project, re.M)  # no second copy
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert 'input = "chrono_engine/_version.py"' in text
