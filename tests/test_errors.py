"""The error family (chrono_engine.errors): every class is a ChronoError and the built-in a
user would catch, and the raise sites of the fit, TKG and time-language layers raise the
family's class named in errors.py with a message naming the argument."""
from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from chrono_engine import errors, tkg
from chrono_engine.errors import ChronoError
from chrono_engine.tkg import rules as R

BUILTIN = {"SchemaError": ValueError, "QueryError": ValueError, "ConfigError": ValueError,
           "FitError": ValueError, "ArgumentTypeError": TypeError, "LifecycleError": ValueError,
           "NotFoundError": KeyError, "StorageError": OSError, "CorruptStoreError": OSError, "StoreLockedError": OSError,
           "TimeParseError": ValueError, "DataFileError": ValueError, "EmbeddingError": ValueError,
           "MissingDependencyError": ImportError, "ModelFileError": OSError,
           "DatasetNotFoundError": ValueError, "DownloadError": OSError, "ShardError": RuntimeError,
           "ServiceError": RuntimeError}


def test_every_class_is_a_chrono_error_and_its_builtin():
    classes = {n: c for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, Exception)}
    assert set(errors.__all__) == set(classes)
    assert set(BUILTIN) == set(classes) - {"ChronoError"}  # a new class needs its row here
    for name, builtin in BUILTIN.items():
        cls = classes[name]
        assert issubclass(cls, ChronoError) and issubclass(cls, builtin), name
        assert cls.__doc__ and f":class:`{name}`" in errors.__doc__, name  # the family's map names it


def _history(n_entities=4, n_relations=2, span=10):
    return R.build_history(np.array([[0, 0, 1, span - 1], [1, 1, 0, span - 1]], np.int64),
                           n_entities, n_relations)


def _raises(error, builtin, match, call, *args, **kwargs):
    """``call`` raises ``error``, which is a ChronoError and ``builtin``, and its message matches."""
    with pytest.raises(error, match=match) as info:
        call(*args, **kwargs)
    assert isinstance(info.value, ChronoError) and isinstance(info.value, builtin)


def test_tkg_sizes_beyond_the_int64_keys_raise_config_error():
    _raises(errors.ConfigError, ValueError, "1000000 entities x 10000 relations x 1000 time steps do not fit",
            R.build_history, np.array([[0, 0, 1, 999]], np.int64), 10**6, 10**4)
    rules = R.RuleSet(np.array([[0, 0, -1, -1]], np.int32), np.ones(1, np.int8), np.ones(1, np.int64),
                      np.array([0.5]), np.array([0.0]))
    hist = _history(n_relations=40_000)
    _raises(errors.ConfigError, ValueError, "40000 relations .* too many for the int64 rule keys",
            R.forecast_ranks, rules, np.array([[0, 0, 1, 9]], np.int64), hist, None, None)


def test_tkg_unknown_split_raises_not_found_error():
    empty = pa.table({"subject": pa.array([], pa.int32())})
    d = tkg.TKG(("a",), ("r",), empty, empty, empty, "day", None, "names")
    with pytest.raises(errors.NotFoundError) as info:
        d.split("dev")
    assert isinstance(info.value, KeyError)
    assert str(info.value) == "split must be one of ('train', 'valid', 'test'), got 'dev'"


@pytest.mark.slow
def test_the_embed_layer_without_its_extra_says_which_extra_to_install(tmp_path):
    """onnx and onnxruntime are the [embed] extra: without them the package and every layer
    but embed import and work; an encoder raises MissingDependencyError naming the extra."""
    code = """
import sys
sys.modules["onnx"] = None  # as if not installed: importing them raises ImportError
sys.modules["onnxruntime"] = None
import chrono_engine as ce
from chrono_engine.errors import ChronoError, MissingDependencyError
e = ce.Engine(dim=4)
e.ingest({"vector": [[1.0, 0.0, 0.0, 0.0]], "valid_from": ["2024-01-01"]})
assert e.search([1.0, 0.0, 0.0, 0.0], k=1).num_rows == 1
from chrono_engine.embed import _runtime
for make, module in ((lambda: ce.TemporalEncoder(dim=32), "onnx"),
                     (lambda: ce.TemporalEmbedder(text=lambda texts: texts), "onnx"),
                     (_runtime.onnxruntime, "onnxruntime")):
    try:
        make()
    except MissingDependencyError as err:
        assert isinstance(err, ImportError) and isinstance(err, ChronoError)
        assert str(err) == (f"chrono_engine.embed needs {module}, which is not installed: "
                            'pip install "chrono_engine[embed]"'), str(err)
    else:
        raise AssertionError("no MissingDependencyError")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)  # outside the checkout: the installed package, not the source tree
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.slow
def test_the_embed_extra_is_imported_on_first_use_only(tmp_path):
    code = "import sys, chrono_engine.embed; print(sorted({'onnx', 'onnxruntime'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)  # outside the checkout: the installed package, not the source tree
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
