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


def _shared_data_beside_checkout() -> Path | None:
    """``shared/data`` beside this checkout, or beside the main checkout when this one is a
    linked git worktree (its ``.git`` file reads ``gitdir: <main>/.git/worktrees/<name>``)."""
    root = Path(__file__).resolve().parents[1]
    tops = [root]
    git = root / ".git"
    if git.is_file():
        text = git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            tops.append((root / text[len("gitdir:"):].strip()).resolve().parents[2])
    for top in tops:
        if (top.parent / "shared" / "data").is_dir():
            return top.parent / "shared" / "data"
    return None


# The benchmark data (ICEWS14, TimeQA) is not in the repository: the data tests ask
# chrono_engine.datasets for it by name, and it looks in CHRONO_DATA_DIR. Unless the user (or
# .ci/run) set that, use the copy beside the checkout; without one those tests skip, saying why.
if not os.environ.get("CHRONO_DATA_DIR"):
    _shared = _shared_data_beside_checkout()
    if _shared is not None:
        os.environ["CHRONO_DATA_DIR"] = str(_shared)

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


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """A local Ray instance (2 CPUs) for a module's tests, stopped after them (one already
    running is used as it is). Ray puts the driver's working directory on its workers'
    sys.path: from a source checkout without the compiled core (CI's clean clone, where the
    tests run against the installed package) the workers would import the checkout's
    chrono_engine/ and fail, so Ray is started from an empty directory."""
    ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")
    import warnings

    started = not ray.is_initialized()
    if started:
        here = os.getcwd()
        os.chdir(tmp_path_factory.mktemp("ray_cwd"))
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        finally:
            os.chdir(here)
    with warnings.catch_warnings():  # Ray 2.60's own defaults trip its deprecation checks when made
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray\.data\.context")
        ctx = ray.data.DataContext.get_current()
    bars = ctx.enable_progress_bars
    ctx.enable_progress_bars = False
    yield ray
    ctx.enable_progress_bars = bars
    if started:
        ray.shutdown()
