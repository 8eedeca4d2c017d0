"""Beyond one machine on Ray (extra ``[ray]``; docs/distributed.md).

- :func:`rescore` / :func:`rescore_parquet`: :func:`chrono_engine.score` over a
  ``ray.data.Dataset`` of candidates (Arrow batches through ``map_batches`` on an actor pool
  holding the compiled policy); Parquet in and out.
- :class:`ShardedEngine`: N :class:`~chrono_engine.Engine` shards in Ray actors, items placed
  by ranges of a key of their stem, ``search_batch`` fanned out and merged exactly; the single
  engine's API; replicas of each shard with failover, ``add_shards`` online.

Ray is imported when one of these is first used; a missing Ray raises
:class:`~chrono_engine.errors.MissingDependencyError` naming the extra.
"""
from __future__ import annotations

_LAZY = {"rescore": "._rescore", "rescore_parquet": "._rescore", "ShardedEngine": "._sharded",
         "shard_of": "._sharded", "placement_key": "._sharded"}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chrono_engine.distributed' has no attribute {name!r}")
