"""Distributed rescoring with Ray Data: :func:`chrono_engine.score` over a
``ray.data.Dataset`` of candidates, and Parquet in and out (docs/distributed.md).

Each Arrow batch of the dataset goes through ``ce.score`` in an actor of a pool; every
actor holds the same :class:`~chrono_engine.ScoringPolicy` (unpickled once, when the actor
starts) and scores at the same instant T, read once on the driver. The kernel scores each
row from that row's columns alone, so a row's ``validity`` and ``score`` are the float32
values ``ce.score`` gives it in one process, bit for bit, whatever batch it lands in::

    import ray, chrono_engine as ce
    from chrono_engine.distributed import rescore
    out = rescore(ray.data.read_parquet("cands/"), ce.ScoringPolicy(decay=ce.Exponential(half_life=30)),
                  as_of="2025-06-01")
    out.write_parquet("scored/")
"""
from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .._args import THREADS_MAX, count, shown
from ..errors import QueryError
from .._util import import_extra
from ..scoring import ScoringPolicy, score
from ..search import instant

ray = import_extra("ray", "ray", "chrono_engine.distributed.rescore")
import_extra("ray.data", "ray", "chrono_engine.distributed.rescore")  # ray[data]: ray.data.Dataset

__all__ = ["rescore", "rescore_parquet", "BATCH_ROWS"]

#: rows per batch handed to ``ce.score`` by default: large enough that Ray's cost per batch
#: is small beside the kernel's, small enough to bound an actor's memory (~30 MB of inputs)
BATCH_ROWS = 1 << 19
#: what :func:`rescore_parquet` does when ``dst`` exists (Ray's write modes)
WRITE_MODES = ("error", "overwrite", "append")
_ACTORS_MAX = 1 << 16


class _Scorer:
    """The callable class of the actor pool: holds the policy, the instant (µs) and the
    thread count, and scores each Arrow batch with exactly :func:`chrono_engine.score`."""

    def __init__(self, policy: ScoringPolicy, as_of_us: int, threads: int):
        self.policy, self.as_of_us, self.threads = policy, as_of_us, threads

    def __call__(self, batch: pa.Table) -> pa.Table:
        return score(batch, as_of=self.as_of_us, policy=self.policy, threads=self.threads)


def rescore(dataset: Any, policy: ScoringPolicy | None = None, *, as_of: Any, threads_per_actor: int = 1,
            actors: int | tuple[int, int] | None = None, batch_size: int = BATCH_ROWS) -> Any:
    """:func:`chrono_engine.score` on every row of a ``ray.data.Dataset``; returns the
    (lazy) dataset with ``validity`` and ``score`` columns added as ``ce.score`` adds them
    (float32; float64 with the article preset), every other column carried through.

    ``dataset``: candidates with the columns ``ce.score`` reads (``similarity``,
    ``observed_at`` or ``valid_from``; optional ``reliability``, ``fact_type``,
    ``valid_from`` / ``valid_to``, ``deprecated``). ``as_of``: the query time T, read
    here on the driver by the engine's one rule for times, so every actor scores at the
    same instant. ``threads_per_actor``: ``ce.score``'s ``threads`` in each actor, and the
    CPUs each actor reserves. ``actors``: an int for a fixed pool, ``(min, max)`` for one
    that Ray autoscales, None for ``(1, cluster CPUs // threads_per_actor)`` (the cluster
    as it is now). A pool must be able to start: its first actors' CPUs must fit in the
    cluster, or a QueryError says so (Ray would wait forever). ``batch_size``: rows per
    ``ce.score`` call.

    The schema is checked on the driver (``ce.score``'s own checks on zero rows of it), so
    a missing or mistyped column is a QueryError here rather than one wrapped in Ray's
    task error; a bad *value* (a reliability outside (0, 1]) is found in the actor that
    scores it, and its row number counts from the start of that batch. Row order follows
    the dataset's ``DataContext.execution_options.preserve_order`` (Ray's default, False,
    may emit blocks in another order; each row keeps its own columns).
    """
    return _rescore(dataset, policy, as_of, threads_per_actor, actors, batch_size, spare_cpus=0)


def rescore_parquet(src: str | os.PathLike | list, dst: str | os.PathLike, policy: ScoringPolicy | None = None, *,
                    as_of: Any, mode: str = "error", threads_per_actor: int = 1,
                    actors: int | tuple[int, int] | None = None, batch_size: int = BATCH_ROWS) -> int:
    """Read candidates from Parquet (``src``: a file, a directory or a list of them, as
    ``ray.data.read_parquet`` takes), :func:`rescore` them and write Parquet files under the
    directory ``dst`` (a local path, shared storage on a cluster, or a URI pyarrow opens:
    ``s3://…``); returns the number of rows written, read from the footers of the files
    this call wrote.

    ``mode``: "error" (the default: ``dst`` must not exist, so a rerun never doubles the
    rows), "overwrite" (its contents are replaced) or "append". The other arguments are
    :func:`rescore`'s; the pool must start with at least one CPU of the cluster free, for
    Ray's file-listing task (it needs one, and would otherwise wait behind the actors
    forever). Reading and writing tasks reserve no CPU, so they never wait behind the
    actors either (they share the actors' cores).
    """
    if mode not in WRITE_MODES:
        raise QueryError(f"mode must be one of {', '.join(WRITE_MODES)}, got {shown(mode)}")
    if isinstance(src, (str, os.PathLike)):
        src = _absolute(src)
    elif not (isinstance(src, list) and src and all(isinstance(p, (str, os.PathLike)) for p in src)):
        raise QueryError(f"src must be a path or a non-empty list of paths, got {type(src).__name__}")
    else:
        src = [_absolute(p) for p in src]
    fs, root = _filesystem(dst)
    if mode == "error" and fs.get_file_info(root).type != pafs.FileType.NotFound:
        raise QueryError(f"dst {shown(os.fspath(dst))} already exists (mode='overwrite' replaces it, "
                         "'append' adds to it)")
    before = _parquet_files(fs, root) if mode == "append" else set()
    out = _rescore(ray.data.read_parquet(src, num_cpus=0), policy, as_of, threads_per_actor, actors, batch_size,
                   spare_cpus=1)
    out.write_parquet(root, filesystem=fs, mode=mode, ray_remote_args={"num_cpus": 0})
    return sum(pq.read_metadata(fs.open_input_file(p)).num_rows for p in sorted(_parquet_files(fs, root) - before))


def _rescore(dataset: Any, policy: Any, as_of: Any, threads_per_actor: Any, actors: Any, batch_size: Any,
             spare_cpus: int) -> Any:
    if not isinstance(dataset, ray.data.Dataset):
        raise QueryError(f"dataset must be a ray.data.Dataset, got {type(dataset).__name__}")
    policy = ScoringPolicy() if policy is None else policy
    if not isinstance(policy, ScoringPolicy):
        raise QueryError(f"policy must be a ScoringPolicy, got {type(policy).__name__}")
    threads = count(threads_per_actor, "threads_per_actor", lo=1, hi=THREADS_MAX, error=QueryError)
    batch_size = count(batch_size, "batch_size", lo=1, hi=2**31 - 1, error=QueryError)
    t = instant(as_of, "as_of")
    compute = _pool(actors, threads, spare_cpus)
    _check_schema(dataset, t, policy)
    return dataset.map_batches(
        _Scorer, batch_format="pyarrow", batch_size=batch_size, compute=compute,
        fn_constructor_kwargs={"policy": policy, "as_of_us": t, "threads": threads},
        num_cpus=threads, udf_modifying_row_count=False, zero_copy_batch=True)


def _pool(actors: Any, threads: int, spare_cpus: int) -> Any:
    """The actor pool as ``compute=ActorPoolStrategy(...)`` (``concurrency=`` is deprecated
    since Ray 2.51). A pool whose first actors do not fit in the cluster, less
    ``spare_cpus``, would wait forever: refused here."""
    if isinstance(actors, tuple):
        if len(actors) != 2:
            raise QueryError(f"actors must be an int, a (min, max) pair or None, got {shown(actors)}")
        lo = count(actors[0], "actors (min)", lo=1, hi=_ACTORS_MAX, error=QueryError)
        hi = count(actors[1], "actors (max)", lo=lo, hi=_ACTORS_MAX, error=QueryError)
    elif actors is not None:
        lo = hi = count(actors, "actors", lo=1, hi=_ACTORS_MAX, error=QueryError)
    if not ray.is_initialized():
        ray.init()
    cpus = int(ray.cluster_resources().get("CPU", 0))
    node_cpus = max((int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")), default=0)
    if threads > node_cpus:
        raise QueryError(f"threads_per_actor={threads} needs {threads} CPUs in one node; the largest node "
                         f"has {node_cpus}")
    if actors is None:
        lo, hi = 1, max(1, cpus // threads)
    if lo * threads > cpus - spare_cpus:
        need = f" and {spare_cpus} left free for Ray's file listing" if spare_cpus else ""
        raise QueryError(f"the actor pool starts with {lo} actor(s) of {threads} CPU(s): {lo * threads} CPUs{need}, "
                         f"but the cluster has {cpus} (use fewer actors, a (min, max) pool or fewer threads_per_actor)")
    if lo == hi:
        return ray.data.ActorPoolStrategy(size=lo)
    return ray.data.ActorPoolStrategy(min_size=lo, max_size=hi)


def _check_schema(dataset: Any, as_of_us: int, policy: ScoringPolicy) -> None:
    """``ce.score``'s own column checks, on zero rows of the dataset's schema, on the driver."""
    schema = dataset.schema()
    if schema is None:  # no blocks: nothing to score
        return
    names = list(schema.names)
    for name in ("validity", "score"):
        if name in names:
            raise QueryError(f"the dataset already has a {name!r} column (rescore adds it): drop or rename it")
    types = list(schema.types)
    if all(isinstance(t, pa.DataType) for t in types):
        score(pa.schema(list(zip(names, types))).empty_table(), as_of=as_of_us, policy=policy)
    elif "similarity" not in names:  # not Arrow types: the rest is checked per batch
        raise QueryError("candidates need a 'similarity' column")


def _absolute(path: str | os.PathLike) -> str:
    """A local path made absolute here, on the driver (Ray's workers do not run in the
    driver's working directory); a URI (``s3://…``) as it is."""
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)


def _filesystem(path: Any) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) of an output directory: a URI by its scheme, else local."""
    if not isinstance(path, (str, os.PathLike)):
        raise QueryError(f"dst must be a path, got {type(path).__name__}")
    path = os.fspath(path)
    if "://" in path:
        try:
            return pafs.FileSystem.from_uri(path)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise QueryError(f"dst {shown(path)}: {e}") from None
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _parquet_files(fs: Any, root: str) -> set[str]:
    sel = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    return {f.path for f in fs.get_file_info(sel) if f.type == pafs.FileType.File and f.path.endswith(".parquet")}
