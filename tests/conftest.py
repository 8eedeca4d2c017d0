import sys
from pathlib import Path

import os

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must be reproducible); developers get
# fresh random examples on each run.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

sys.path.insert(0, str(Path(__file__).parent))  # tests/reference.py

import chrono_engine as ce  # noqa: E402
from chrono_engine.synthetic import make_corpus  # noqa: E402


def policy_for(corpus):
    return ce.DecayPolicy({f"type{i:02d}": ce.Exponential(half_life=h) for i, h in enumerate(corpus.half_lives)},
                          default=None)


@pytest.fixture(scope="session")
def small_corpus():
    return make_corpus(4000, 32, clusters=24, seed=7)


@pytest.fixture(scope="session", params=["similarity", "bounds"])
def small_engine(small_corpus, request):
    """The small corpus in an engine, once for each order of the certified scan."""
    eng = ce.Engine(32, decay=policy_for(small_corpus), threads=2, scan=request.param)
    eng.ingest(small_corpus.to_dict())
    return eng
