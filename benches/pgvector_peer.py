"""PostgreSQL + pgvector as a benchmark peer for filtered temporal vector search.

A throwaway PostgreSQL cluster (``initdb`` into a temporary directory, a unix socket in that
directory only, no TCP) with the pgvector extension, loaded with the same rows the engine
holds, and searched the way a pgvector user would write the engine's ``as_of`` query. Set up
the extension once with ``benches/setup_pgvector.sh`` (builds pgvector 0.8.0 for the Debian
PostgreSQL 15); the client is ``psycopg[binary]`` 3.x (the ``bench`` extra)::

    import sys; sys.path.insert(0, "benches")
    from pgvector_peer import PgPeer

    with PgPeer() as pg:                      # initdb + pg_ctl start; stopped and removed on exit
        pg.load(ids, X, valid_from, valid_to, ingested_at, retracted_at, observed_at,
                reliability, beta, {"tenant": ("string", tenants), "tags": ("list<string>", tags)})
        exact = pg.search_exact(q, 10, T, K, {"tenant": "acme"})          # a Chroma-style dict ...
        approx = pg.search_hnsw(q, 10, T, K, "priority >= %s", [3], candidates=100)  # ... or SQL

The server: one backend, ``max_parallel_workers_per_gather = 0`` (one thread, like the
engine's one-thread rows), ``max_parallel_maintenance_workers = 0`` (the HNSW build runs on
one core), ``shared_buffers = 2GB``, ``work_mem = 64MB``, ``maintenance_work_mem = 2GB`` (the
HNSW graph is built in memory), ``jit = off`` (JIT compiles cost more than they save on these
queries), ``autovacuum = off`` (the table is static; ``load`` runs ``VACUUM (ANALYZE)``) and
durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``, ``wal_level =
minimal``): a benchmark cluster. ``PgPeer(settings={...})`` overrides any of these. Run as
root, the server runs as the ``postgres`` system user (initdb refuses root) through ``runuser``
and the temporary directory is owned by it.

The table (``load``): ``id bigint primary key``, ``embedding vector(d)``, the bitemporal
columns ``valid_from valid_to ingested_at retracted_at observed_at`` (bigint µs since the
epoch; open ends are int64 max), ``reliability`` and ``beta`` (double precision; ``beta`` is
an exponential decay rate per day), then one column per metadata field: ``string`` text,
``int64`` bigint, ``float64`` double precision (NaN is loaded as NULL: PostgreSQL sorts NaN
above every number, NumPy compares it false), ``bool`` boolean, ``list<string>`` text[].
Rows go in by binary COPY; then an HNSW index (``vector_cosine_ops``, m = 16,
ef_construction = 64), btree indexes on ``valid_from`` and each scalar metadata column, GIN on
each text[] column, and ``VACUUM (ANALYZE)``. ``PgPeer.timings`` has the seconds of each step.

The score (the engine's product fusion) of a row at query time T::

    greatest(0, least(1, 1 - (embedding <=> q))) * reliability
        * exp(-beta * greatest(0, T - observed_at) / 86400e6)

over the rows with ``valid_from <= T < valid_to`` and ``ingested_at <= K < retracted_at``
(K = ``known_us``, the transaction time: "what was known then"; by default the last
``ingested_at`` loaded) and the metadata filter; ties go to the smaller id.

- ``search_exact``: one statement, ``ORDER BY score DESC, id LIMIT k`` over every row the
  WHERE keeps (a sequential scan, or btree/GIN for a selective filter: the planner's
  choice); the ORDER BY is on the computed score, so the HNSW index cannot serve it
  (``explain_exact`` shows the plan).
- ``search_hnsw``: ``SET hnsw.iterative_scan = relaxed_order`` (pgvector 0.8's filtered
  HNSW scan) and ``hnsw.max_scan_tuples`` (default: the row count, so a selective filter is
  not cut short), then the query pgvector's README recommends for relaxed order: a
  ``MATERIALIZED`` CTE ``ORDER BY embedding <=> q LIMIT C`` under the WHERE, and an outer
  query that reranks those C by the score. The planner may still prefer a btree/seqscan +
  sort over the HNSW index when the filter is selective (that plan is exact); ``force_hnsw=
  True`` sets ``enable_sort = off`` so only the index's order avoids a sort (``explain_hnsw``
  shows the plan).

Filters: ``where_sql`` is a SQL boolean expression over the metadata columns with ``%s``
placeholders and ``params`` its values, or a dict in the Chroma / LangChain filter language,
translated by :func:`where_to_sql`: field equality ``{"tenant": "acme"}``, operators ``$eq
$ne $gt $gte $lt $lte $in $nin``, ``$and`` / ``$or`` lists, ``$not``, several keys in one
dict meaning AND. A ``list<string>`` field matches when any element matches (``$eq`` is
``col @> ARRAY[v]``, ``$in`` is ``col && v``: both GIN-indexable; ``$ne`` / ``$nin`` are their
negations). NULLs follow Chroma's missing field: a NULL (or a field not loaded at all) fails
every positive condition and passes ``$ne`` / ``$nin``; ``$not`` is the complement of the
rows its filter keeps (``(...) IS NOT TRUE``).

``python benches/pgvector_peer.py --selfcheck`` builds a 5,000 x 32 table and checks
``search_exact`` against a NumPy oracle of the same definition, the filter translation
against a NumPy evaluator, and ``search_hnsw``'s recall; ``--scale 200000,384`` times a load
of that size and a few queries.

Caveats: the server process outlives a Python killed by SIGKILL (its directory is in
``/tmp/chrono-pgvector-*``; ``pg_ctl -D <dir>/data stop``). One connection, one query at a
time.
"""
from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from typing import Any, Sequence

import numpy as np

__all__ = ["PgPeer", "where_to_sql", "SQL_TYPES", "INT64_MAX", "US_PER_DAY"]

INT64_MAX = int(np.iinfo(np.int64).max)
US_PER_DAY = 86_400_000_000
SQL_TYPES = {"string": "text", "int64": "bigint", "float64": "double precision", "bool": "boolean",
             "list<string>": "text[]"}
_COPY_TYPES = {"string": "text", "int64": "int8", "float64": "float8", "bool": "bool", "list<string>": "text[]"}
_CORE_COLUMNS = ("id", "embedding", "valid_from", "valid_to", "ingested_at", "retracted_at", "observed_at",
                 "reliability", "beta")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CMP = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_NEGATIVE = ("$ne", "$nin")

DEFAULT_SETTINGS = {
    "listen_addresses": "''",
    "port": "5432",
    "shared_buffers": "'2GB'",
    "work_mem": "'64MB'",
    "maintenance_work_mem": "'2GB'",
    "max_parallel_workers_per_gather": "0",
    "max_parallel_maintenance_workers": "0",
    "jit": "off",
    "autovacuum": "off",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_wal_size": "'8GB'",
    "checkpoint_timeout": "'1h'",
}


# ------------------------------------------------------------------------------------ filters

def _ident(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"metadata field names must match [A-Za-z_][A-Za-z0-9_]*, got {name!r}")
    return '"' + name + '"'


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_float(v: Any) -> bool:
    return isinstance(v, (float, np.floating))


def _native(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _scalar_cast(kind: str, v: Any, field: str) -> str:
    """The SQL type a parameter of column kind ``kind`` is cast to (bigint values compared with
    a float are compared as double precision, so 2.5 is not rounded to an integer)."""
    if kind == "string" or kind == "list<string>":
        if not isinstance(v, str):
            raise TypeError(f"field {field!r} is {kind}: compare it with strings, got {v!r}")
        return "text"
    if kind == "bool":
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"field {field!r} is bool: compare it with True / False, got {v!r}")
        return "boolean"
    if _is_int(v):
        return "bigint" if kind == "int64" else "double precision"
    if _is_float(v):
        return "double precision"
    raise TypeError(f"field {field!r} is {kind}: compare it with numbers, got {v!r}")


def where_to_sql(where: dict | None, kinds: dict[str, str]) -> tuple[str, list]:
    """Translate a Chroma / LangChain filter dict into ``(sql, params)`` over columns of the
    given kinds (``{"tenant": "string", "tags": "list<string>", ...}``). See the module
    docstring for the semantics (any-element match on lists; NULL and unknown fields fail
    positive conditions and pass ``$ne`` / ``$nin``)."""
    params: list = []
    if where is None or where == {}:
        return "TRUE", params

    def leaf(field: str, op: str, v: Any) -> str:
        if op not in _CMP and op not in ("$in", "$nin"):
            raise ValueError(f"unknown operator {op!r} on field {field!r}")
        kind = kinds.get(field)
        if kind is None:  # Chroma: a field the row does not have
            return "TRUE" if op in _NEGATIVE else "FALSE"
        col = _ident(field)
        if op in ("$in", "$nin"):
            if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
                raise TypeError(f"{op} on {field!r} needs a list, got {v!r}")
            vals = [_native(x) for x in v]
            casts = {_scalar_cast(kind, x, field) for x in vals} or {SQL_TYPES[kind].replace("[]", "")}
            cast = "double precision" if "double precision" in casts else casts.pop()
            params.append(vals)
            if kind == "list<string>":
                return f"{col} && %s::text[]" if op == "$in" else f"({col} IS NULL OR NOT {col} && %s::text[])"
            if op == "$in":
                return f"{col} = ANY(%s::{cast}[])"
            return f"({col} IS NULL OR {col} <> ALL(%s::{cast}[]))"
        if v is None or isinstance(v, (list, tuple, dict, np.ndarray)):
            raise TypeError(f"{op} on {field!r} needs one value, got {v!r}")
        v = _native(v)
        cast = _scalar_cast(kind, v, field)
        params.append(v)
        if kind == "list<string>":
            if op == "$eq":
                return f"{col} @> ARRAY[%s::text]"
            if op == "$ne":
                return f"({col} IS NULL OR NOT {col} @> ARRAY[%s::text])"
            return f"EXISTS (SELECT 1 FROM unnest({col}) AS e(v) WHERE e.v {_CMP[op]} %s::text)"
        if op == "$ne":
            return f"{col} IS DISTINCT FROM %s::{cast}"
        return f"{col} {_CMP[op]} %s::{cast}"

    def node(w: Any) -> str:
        if not isinstance(w, dict) or not w:
            raise ValueError(f"a filter is a non-empty dict, got {w!r}")
        parts = []
        for key, val in w.items():
            if key in ("$and", "$or"):
                if not isinstance(val, (list, tuple)) or not val:
                    raise ValueError(f"{key} needs a non-empty list, got {val!r}")
                parts.append("(" + (" AND " if key == "$and" else " OR ").join(node(x) for x in val) + ")")
            elif key == "$not":
                parts.append(f"(({node(val)}) IS NOT TRUE)")
            elif key.startswith("$"):
                raise ValueError(f"unknown logical operator {key!r}")
            elif isinstance(val, dict):
                if not val:
                    raise ValueError(f"field {key!r}: empty condition")
                parts.extend(leaf(key, op, v) for op, v in val.items())
            else:
                parts.append(leaf(key, "$eq", val))
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    return node(where), params


# ------------------------------------------------------------------------------------ server

def _bindir(bindir: str | None) -> str:
    for cand in (bindir, os.environ.get("PG_BINDIR"), "/usr/lib/postgresql/15/bin"):
        if cand and os.path.isfile(os.path.join(cand, "initdb")):
            return cand
    pgc = os.environ.get("PG_CONFIG") or shutil.which("pg_config")
    if pgc:
        out = subprocess.run([pgc, "--bindir"], capture_output=True, text=True).stdout.strip()
        if out and os.path.isfile(os.path.join(out, "initdb")):
            return out
    raise RuntimeError("no PostgreSQL server binaries (initdb) found: install postgresql-15 or set PG_BINDIR")


def _server_user(user: str | None) -> str | None:
    """The OS user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in (user, os.environ.get("CHRONO_PG_USER"), "postgres", "nobody"):
        if not name:
            continue
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root needs an unprivileged user for the server (postgres or nobody)")


def _shutdown(state: dict) -> None:
    """Close the connection, stop the server, remove the directory (idempotent)."""
    conn = state.pop("conn", None)
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
    if state.pop("started", False):
        pg_ctl = [*state["runas"], os.path.join(state["bindir"], "pg_ctl"), "-D", state["data"]]
        r = subprocess.run([*pg_ctl, "-m", "fast", "-w", "-t", "60", "stop"], capture_output=True, cwd="/")
        if r.returncode != 0:
            subprocess.run([*pg_ctl, "-m", "immediate", "-w", "-t", "30", "stop"], capture_output=True, cwd="/")
    tmp = state.pop("tmp", None)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


def _vector_dumpers(oid: int):
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorText(Dumper):
        format = Format.TEXT

        def dump(self, obj):
            a = np.asarray(obj, np.float32).ravel()
            return ("[" + ",".join(map(repr, a.tolist())) + "]").encode()

    class VectorBinary(Dumper):
        """pgvector's binary input: int16 dim, int16 0, dim big-endian float32. Bytes pass
        through (``load`` prepares them in one NumPy pass)."""
        format = Format.BINARY

        def dump(self, obj):
            if isinstance(obj, (bytes, memoryview)):
                return obj
            a = np.asarray(obj, np.float32).ravel()
            return struct.pack("!HH", a.size, 0) + a.astype(">f4").tobytes()

    VectorText.oid = VectorBinary.oid = oid
    return VectorText, VectorBinary


def _column(kind: str, values: Any, n: int, name: str) -> list:
    """One metadata column as a list of Python values (None = NULL)."""
    if kind not in SQL_TYPES:
        raise ValueError(f"metadata {name!r}: kind must be one of {sorted(SQL_TYPES)}, got {kind!r}")
    vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if len(vals) != n:
        raise ValueError(f"metadata {name!r} has {len(vals)} values for {n} rows")
    if kind == "float64":
        return [None if v is None or v != v else float(v) for v in vals]
    if kind == "int64":
        return [None if v is None else int(v) for v in vals]
    if kind == "bool":
        return [None if v is None else bool(v) for v in vals]
    if kind == "string":
        return [None if v is None else str(v) for v in vals]
    return [None if v is None else [str(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
            for v in vals]


class PgPeer:
    """A throwaway PostgreSQL + pgvector cluster; see the module docstring."""

    def __init__(self, *, shared_buffers: str = "2GB", settings: dict | None = None, bindir: str | None = None,
                 user: str | None = None, verbose: bool = False) -> None:
        import psycopg
        self.verbose = verbose
        self.timings: dict[str, float] = {}
        self.kinds: dict[str, str] = {}
        self.n = 0
        self.dim = 0
        self.known_us: int | None = None  # default K: the last ingested_at loaded
        self.table = "items"
        self._gucs: dict[str, str] = {}
        bindir = _bindir(bindir)
        runuser = _server_user(user)
        runas = ["runuser", "-u", runuser, "--"] if runuser else []
        self._state: dict = {"bindir": bindir, "runas": runas}
        self._finalizer = weakref.finalize(self, _shutdown, self._state)
        try:
            t0 = time.perf_counter()
            tmp = tempfile.mkdtemp(prefix="chrono-pgvector-")
            self._state["tmp"] = tmp
            self.socket_dir = tmp
            data = os.path.join(tmp, "data")
            self._state["data"] = data
            if runuser:
                pw = pwd.getpwnam(runuser)
                os.chown(tmp, pw.pw_uid, pw.pw_gid)
            self._run([*runas, os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", "postgres",
                       "-E", "UTF8", "--locale=C", "--no-sync"], cwd=tmp)
            conf = dict(DEFAULT_SETTINGS, shared_buffers=f"'{shared_buffers}'",
                        unix_socket_directories=f"'{tmp}'")
            conf.update(settings or {})
            with open(os.path.join(data, "postgresql.conf"), "a") as f:  # root keeps the file's owner
                f.write("\n# chrono_engine benches/pgvector_peer.py\n")
                f.writelines(f"{k} = {v}\n" for k, v in conf.items())
            self.port = int(str(conf["port"]).strip("'"))
            log = os.path.join(tmp, "server.log")
            self.log_path = log
            r = subprocess.run([*runas, os.path.join(bindir, "pg_ctl"), "-D", data, "-l", log, "-w", "-t", "60",
                                "start"], capture_output=True, text=True, cwd=tmp)
            self._state["started"] = True  # a failed start may still leave a postmaster
            if r.returncode != 0:
                tail = open(log).read()[-3000:] if os.path.exists(log) else ""
                raise RuntimeError(f"pg_ctl start failed: {r.stderr.strip()}\n{tail}")
            self.conn = psycopg.connect(host=tmp, port=self.port, user="postgres", dbname="postgres",
                                        autocommit=True, prepare_threshold=None)
            self._state["conn"] = self.conn
            try:
                self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as e:
                raise RuntimeError(f"CREATE EXTENSION vector failed ({e}); run benches/setup_pgvector.sh") from None
            from psycopg.types import TypeInfo
            info = TypeInfo.fetch(self.conn, "vector")
            info.register(self.conn)
            self.vector_oid = info.oid
            for dumper in _vector_dumpers(info.oid):
                self.conn.adapters.register_dumper(np.ndarray, dumper)
            self.versions = {
                "postgresql": self.conn.execute("SHOW server_version").fetchone()[0],
                "pgvector": self.conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0],
                "psycopg": psycopg.__version__,
            }
            self.timings["start_s"] = time.perf_counter() - t0
            self._say(f"started PostgreSQL {self.versions['postgresql']} + pgvector {self.versions['pgvector']} "
                      f"in {tmp} ({self.timings['start_s']:.1f} s)")
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------------------------- plumbing
    def _say(self, msg: str) -> None:
        if self.verbose:
            print(f"[pgvector_peer] {msg}", file=sys.stderr, flush=True)

    @staticmethod
    def _run(cmd: list[str], cwd: str) -> None:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")

    def close(self) -> None:
        """Stop the server and remove its directory (also at exit and on garbage collection)."""
        self._finalizer()

    def __enter__(self) -> PgPeer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _set(self, name: str, value: Any) -> None:
        value = str(value)
        if self._gucs.get(name) != value:
            self.conn.execute("SELECT set_config(%s, %s, false)", [name, value])
            self._gucs[name] = value

    # ------------------------------------------------------------------------------------ load
    def load(self, ids, vectors, valid_from, valid_to, ingested_at, retracted_at, observed_at, reliability, beta,
             metadata: dict[str, tuple[str, Any]] | None = None, *, m: int = 16, ef_construction: int = 64) -> dict:
        """Create the table, COPY the rows in, build the indexes, VACUUM (ANALYZE). Returns
        (and keeps in ``timings``) the seconds of each step. Replaces an earlier load."""
        X = np.ascontiguousarray(vectors, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError(f"vectors must be n x d, got shape {X.shape}")
        n, d = X.shape
        cols = {"id": ids, "valid_from": valid_from, "valid_to": valid_to, "ingested_at": ingested_at,
                "retracted_at": retracted_at, "observed_at": observed_at}
        ints = {}
        for k, v in cols.items():
            a = np.asarray(v)
            if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
                raise ValueError(f"{k} must be {n} integers, got shape {a.shape} dtype {a.dtype}")
            ints[k] = a.astype(np.int64).tolist()
        floats = {}
        for k, v in (("reliability", reliability), ("beta", beta)):
            a = np.asarray(v, np.float64)
            if a.shape != (n,):
                raise ValueError(f"{k} must be {n} floats, got shape {a.shape}")
            floats[k] = a.tolist()
        metadata = dict(metadata or {})
        kinds, meta_cols = {}, {}
        for name, spec in metadata.items():
            _ident(name)
            if name in _CORE_COLUMNS:
                raise ValueError(f"metadata field {name!r} clashes with a core column")
            kind, values = spec
            kinds[name] = kind
            meta_cols[name] = _column(kind, values, n, name)

        t = self.timings
        t0 = time.perf_counter()
        # the vectors in pgvector's binary layout, one NumPy pass: int16 dim, int16 0, floats
        rec = np.empty(n, dtype=[("dim", ">u2"), ("unused", ">u2"), ("x", ">f4", (d,))])
        rec["dim"], rec["unused"], rec["x"] = d, 0, X
        raw = rec.tobytes()
        width = rec.dtype.itemsize
        vec_bytes = [raw[i * width:(i + 1) * width] for i in range(n)]
        del rec, raw
        names = list(_CORE_COLUMNS) + list(kinds)
        col_sql = ", ".join(_ident(c) for c in names)
        defs = ["id bigint PRIMARY KEY", f"embedding vector({d}) NOT NULL"]
        defs += [f"{c} bigint NOT NULL" for c in _CORE_COLUMNS[2:7]]
        defs += ["reliability double precision NOT NULL", "beta double precision NOT NULL"]
        defs += [f"{_ident(k)} {SQL_TYPES[kinds[k]]}" for k in kinds]
        types = ["int8", "vector"] + ["int8"] * 5 + ["float8"] * 2 + [_COPY_TYPES[kinds[k]] for k in kinds]
        t["prepare_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        with self.conn.transaction():  # CREATE + COPY in one transaction: wal_level=minimal skips the WAL
            self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")
            self.conn.execute(f"CREATE TABLE {self.table} ({', '.join(defs)})")
            with self.conn.cursor() as cur, cur.copy(
                    f"COPY {self.table} ({col_sql}) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(types)
                columns = [ints["id"], vec_bytes] + [ints[c] for c in _CORE_COLUMNS[2:7]] \
                    + [floats["reliability"], floats["beta"]] + [meta_cols[k] for k in kinds]
                for row in zip(*columns):
                    cp.write_row(row)
        t["copy_s"] = time.perf_counter() - t0
        self._say(f"COPY {n} x {d}: {t['copy_s']:.1f} s")
        del vec_bytes
        t0 = time.perf_counter()
        self.conn.execute(f"CREATE INDEX {self.table}_hnsw ON {self.table} USING hnsw (embedding vector_cosine_ops) "
                          f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})")
        t["hnsw_s"] = time.perf_counter() - t0
        self._say(f"HNSW index (m={m}, ef_construction={ef_construction}): {t['hnsw_s']:.1f} s")
        t0 = time.perf_counter()
        self.conn.execute(f"CREATE INDEX {self.table}_valid_from ON {self.table} (valid_from)")
        for k, kind in kinds.items():
            using = "USING gin " if kind == "list<string>" else ""
            self.conn.execute(f"CREATE INDEX {self.table}_m_{k} ON {self.table} {using}({_ident(k)})")
        t["other_indexes_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.conn.execute(f"VACUUM (ANALYZE) {self.table}")
        t["analyze_s"] = time.perf_counter() - t0
        t["load_s"] = sum(t[s] for s in ("prepare_s", "copy_s", "hnsw_s", "other_indexes_s", "analyze_s"))
        self._say(f"btree/GIN {t['other_indexes_s']:.1f} s, VACUUM ANALYZE {t['analyze_s']:.1f} s")
        self.kinds, self.n, self.dim = kinds, n, d
        self.known_us = int(np.max(np.asarray(ingested_at))) if n else 0
        return {k: t[k] for k in ("prepare_s", "copy_s", "hnsw_s", "other_indexes_s", "analyze_s", "load_s")}

    # ---------------------------------------------------------------------------------- search
    def where_to_sql(self, where: dict | None) -> tuple[str, list]:
        """:func:`where_to_sql` over the loaded metadata columns."""
        return where_to_sql(where, self.kinds)

    def _filter(self, t_us: int, known_us: int | None, where_sql: Any, params: Sequence | None) -> tuple[str, list]:
        if self.dim == 0:
            raise RuntimeError("nothing loaded: call load() first")
        if isinstance(known_us, (str, dict)):
            raise TypeError("known_us comes before where_sql: search_*(q, k, t_us, known_us, where_sql, params)")
        T = int(t_us)
        K = int(self.known_us if known_us is None else known_us)
        if isinstance(where_sql, dict):
            if params:
                raise ValueError("params go with a where_sql string, not with a filter dict")
            where_sql, params = self.where_to_sql(where_sql)
        where_sql = where_sql or "TRUE"
        time_sql = f"valid_from <= {T} AND {T} < valid_to AND ingested_at <= {K} AND {K} < retracted_at"
        return f"{time_sql} AND ({where_sql})", list(params or [])

    @staticmethod
    def _score(dist: str, T: int) -> str:
        return (f"greatest(0::float8, least(1::float8, 1::float8 - ({dist}))) * reliability"
                f" * exp(-beta * (greatest(0::bigint, {T}::bigint - observed_at)::float8 / {US_PER_DAY}::float8))")

    def _query(self, q: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(q, dtype=np.float32).ravel()
        if q.size != self.dim:
            raise ValueError(f"the query has {q.size} dimensions, the table {self.dim}")
        return q

    def _exact_sql(self, q, k, t_us, known_us, where_sql, params):
        where, wparams = self._filter(t_us, known_us, where_sql, params)
        sql = (f"SELECT id, {self._score('embedding <=> %s', int(t_us))} AS score FROM {self.table} "
               f"WHERE {where} ORDER BY score DESC, id LIMIT {int(k)}")
        return sql, [self._query(q), *wparams]

    def _hnsw_sql(self, q, k, t_us, known_us, where_sql, params, candidates):
        where, wparams = self._filter(t_us, known_us, where_sql, params)
        sql = (f"WITH c AS MATERIALIZED (SELECT id, reliability, beta, observed_at, embedding <=> %s AS dist "
               f"FROM {self.table} WHERE {where} ORDER BY dist LIMIT {int(candidates)}) "
               f"SELECT id, {self._score('dist', int(t_us))} AS score FROM c ORDER BY score DESC, id LIMIT {int(k)}")
        return sql, [self._query(q), *wparams]

    def _hnsw_settings(self, ef_search: int, max_scan_tuples: int | None, force_hnsw: bool) -> None:
        self._set("hnsw.ef_search", int(ef_search))
        self._set("hnsw.iterative_scan", "relaxed_order")
        self._set("hnsw.max_scan_tuples", int(max_scan_tuples if max_scan_tuples is not None else max(self.n, 1)))
        self._set("enable_sort", "off" if force_hnsw else "on")

    def _exact_settings(self) -> None:
        self._set("enable_sort", "on")

    @staticmethod
    def _result(rows, with_scores: bool):
        ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        if with_scores:
            return ids, np.fromiter((r[1] for r in rows), np.float64, len(rows))
        return ids

    def search_exact(self, q, k: int, t_us: int, known_us: int | None = None, where_sql: str | dict | None = None,
                     params: Sequence | None = None, *, with_scores: bool = False):
        """The exact top-k by fused score (ties: smaller id) among the rows in force at
        ``t_us``, known at ``known_us`` and passing the filter; int64 ids (and scores)."""
        self._exact_settings()
        sql, p = self._exact_sql(q, k, t_us, known_us, where_sql, params)
        return self._result(self.conn.execute(sql, p).fetchall(), with_scores)

    def search_hnsw(self, q, k: int, t_us: int, known_us: int | None = None, where_sql: str | dict | None = None,
                    params: Sequence | None = None, *, ef_search: int = 40, candidates: int = 100,
                    max_scan_tuples: int | None = None, force_hnsw: bool = False, with_scores: bool = False):
        """HNSW with iterative (relaxed-order) scan: the ``candidates`` nearest rows passing the
        filter, reranked by fused score; the top ``k`` ids (fewer if fewer pass)."""
        self._hnsw_settings(ef_search, max_scan_tuples, force_hnsw)
        sql, p = self._hnsw_sql(q, k, t_us, known_us, where_sql, params, candidates)
        return self._result(self.conn.execute(sql, p).fetchall(), with_scores)

    def _explain(self, sql: str, p: list, analyze: bool) -> str:
        opts = "ANALYZE, BUFFERS, " if analyze else ""
        return "\n".join(r[0] for r in self.conn.execute(f"EXPLAIN ({opts}COSTS) {sql}", p).fetchall())

    def explain_exact(self, q, k, t_us, known_us=None, where_sql=None, params=None, *, analyze=False) -> str:
        self._exact_settings()
        return self._explain(*self._exact_sql(q, k, t_us, known_us, where_sql, params), analyze)

    def explain_hnsw(self, q, k, t_us, known_us=None, where_sql=None, params=None, *, ef_search=40, candidates=100,
                     max_scan_tuples=None, force_hnsw=False, analyze=False) -> str:
        self._hnsw_settings(ef_search, max_scan_tuples, force_hnsw)
        return self._explain(*self._hnsw_sql(q, k, t_us, known_us, where_sql, params, candidates), analyze)

    def uses_hnsw(self, *args, **kw) -> bool:
        """Whether the planner serves :meth:`search_hnsw` with these arguments from the HNSW index."""
        return f"{self.table}_hnsw" in self.explain_hnsw(*args, **kw)


# ---------------------------------------------------------------------------- self-check

def _np_where(where: dict | None, meta: dict[str, tuple[str, list]], n: int) -> np.ndarray:
    """NumPy reference of the filter semantics (Chroma: NULL / missing fails positive
    conditions, passes $ne / $nin; lists match when any element does)."""
    import operator
    ops = {"$eq": operator.eq, "$ne": operator.ne, "$gt": operator.gt, "$gte": operator.ge,
           "$lt": operator.lt, "$lte": operator.le}
    if not where:
        return np.ones(n, bool)

    def leaf(field, op, v):
        if field not in meta:
            return np.full(n, op in _NEGATIVE)
        kind, vals = meta[field]
        out = np.zeros(n, bool)
        for i, x in enumerate(vals):
            if x is None:
                out[i] = op in _NEGATIVE
                continue
            xs = x if kind == "list<string>" else [x]
            if op == "$in":
                out[i] = any(e in v for e in xs)
            elif op == "$nin":
                out[i] = not any(e in v for e in xs)
            elif op == "$ne":
                out[i] = not any(e == v for e in xs)
            else:
                out[i] = any(ops[op](e, v) for e in xs)
        return out

    def node(w):
        m = np.ones(n, bool)
        for key, val in w.items():
            if key == "$and":
                for x in val:
                    m &= node(x)
            elif key == "$or":
                o = np.zeros(n, bool)
                for x in val:
                    o |= node(x)
                m &= o
            elif key == "$not":
                m &= ~node(val)
            elif isinstance(val, dict):
                for op, v in val.items():
                    m &= leaf(key, op, v)
            else:
                m &= leaf(key, "$eq", val)
        return m

    return node(where)


def _np_exact(X64, norms2, q, k, T, K, cols, mask):
    """NumPy oracle: pgvector's cosine distance (1 - dot / sqrt(|x|^2 |q|^2), clamped), the
    product fusion in the SQL's order of operations, ties by id."""
    q64 = q.astype(np.float64)
    sim = (X64 @ q64) / np.sqrt(norms2 * float(q64 @ q64))
    dist = 1.0 - np.clip(sim, -1.0, 1.0)
    age = np.maximum(0, T - cols["observed_at"]).astype(np.float64) / float(US_PER_DAY)
    score = np.clip(1.0 - dist, 0.0, 1.0) * cols["reliability"] * np.exp(-cols["beta"] * age)
    ok = mask & (cols["valid_from"] <= T) & (T < cols["valid_to"]) & (cols["ingested_at"] <= K) \
        & (K < cols["retracted_at"])
    rows = np.flatnonzero(ok)
    order = np.lexsort((cols["id"][rows], -score[rows]))[:k]
    return cols["id"][rows[order]], score, ok


def _within_noise(got, want, score, ok, ids, row_of, eps: float = 1e-6) -> bool:
    """Whether ``got`` differs from the oracle's ``want`` only where scores are within
    ``eps`` (float32 distance accumulation in pgvector vs float64 here): same length, rows
    that pass, scores position by position within eps, and exact ties (identical inputs)
    still broken by ascending id, also against the rows left out."""
    if got.size != want.size:
        return False
    rg = np.array([row_of[int(i)] for i in got], np.int64)
    rw = np.array([row_of[int(i)] for i in want], np.int64)
    if got.size == 0:
        return True
    if not ok[rg].all() or not np.allclose(score[rg], score[rw], rtol=0, atol=eps):
        return False
    sg = score[rg]
    if np.any((sg[1:] == sg[:-1]) & (got[1:] < got[:-1])):
        return False
    left_out = ok.copy()
    left_out[rg] = False
    tie = left_out & (score == sg[-1]) & (ids < got[-1])
    return not tie.any() and not np.any(left_out & (score > sg[-1] + eps))


def _synthetic(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    day = US_PER_DAY
    base = 1_700_000_000 * 1_000_000
    centers = rng.normal(size=(max(8, n // 100), d))
    lab = rng.integers(0, len(centers), n)
    X = centers[lab] + 0.7 * rng.normal(size=(n, d))
    ids = rng.permutation(n).astype(np.int64) * 3 + 11  # id order is not row order
    vf = base + rng.integers(0, 365 * day, n)
    vt = vf + rng.integers(30 * day, 400 * day, n)
    vt[rng.random(n) < 0.3] = INT64_MAX
    ing = vf + rng.integers(0, 5 * day, n)
    ret = np.full(n, INT64_MAX, np.int64)
    r = rng.random(n) < 0.1
    ret[r] = ing[r] + rng.integers(day, 200 * day, r.sum())
    obs = vf + rng.integers(0, 10 * day, n)
    rel = rng.uniform(0.6, 1.0, n)
    beta = rng.uniform(0.0, 0.01, n)
    # exact ties: 3% of the rows copy another row's vector and score inputs (not its id)
    dup = rng.choice(n, size=max(1, n // 33), replace=False)
    src = rng.choice(n, size=dup.size)
    X[dup] = X[src]
    for a in (vf, vt, ing, ret, obs, rel, beta):
        a[dup] = a[src]
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    tenants = np.array(["acme", "globex", "initech", "umbrella"], dtype=object)[rng.integers(0, 4, n)]
    tenants[rng.random(n) < 0.1] = None
    prio = rng.integers(0, 10, n).astype(object)
    prio[rng.random(n) < 0.05] = None
    score = rng.random(n)
    score[rng.random(n) < 0.05] = np.nan
    flag = (rng.random(n) < 0.5).astype(object)
    flag[rng.random(n) < 0.1] = None
    palette = ["red", "green", "blue", "black"]
    tags = []
    for i in range(n):
        u = rng.random()
        tags.append(None if u < 0.1 else [] if u < 0.15 else
                    sorted(set(rng.choice(palette, size=rng.integers(1, 4)).tolist())))
    meta = {"tenant": ("string", tenants), "priority": ("int64", prio), "score": ("float64", score),
            "flag": ("bool", flag), "tags": ("list<string>", tags)}
    cols = {"id": ids, "valid_from": vf, "valid_to": vt, "ingested_at": ing, "retracted_at": ret,
            "observed_at": obs, "reliability": rel, "beta": beta}
    return X, cols, meta, centers, base


FILTERS = [
    None,
    {"tenant": "acme"},
    {"$and": [{"priority": {"$gte": 3}}, {"tags": {"$in": ["red", "blue"]}}]},
    {"$or": [{"score": {"$lt": 0.3}}, {"$not": {"flag": True}}, {"tenant": {"$nin": ["acme", "globex"]}}]},
]

TRANSLATION_CASES = [
    {"tenant": "acme"}, {"tenant": {"$ne": "acme"}}, {"tenant": {"$in": ["acme", "initech"]}},
    {"tenant": {"$nin": ["acme", "initech"]}}, {"tenant": {"$gt": "globex"}},
    {"priority": {"$gt": 4}}, {"priority": {"$gte": 2.5}}, {"priority": {"$lt": 3}}, {"priority": {"$lte": 3}},
    {"priority": {"$ne": 7}}, {"priority": {"$in": [1, 2, 9]}}, {"priority": {"$nin": [1, 2]}},
    {"priority": {"$gte": 2, "$lt": 6}}, {"score": {"$lt": 0.5}}, {"score": {"$ne": 0.5}},
    {"flag": True}, {"flag": {"$ne": True}}, {"flag": False},
    {"tags": "red"}, {"tags": {"$ne": "red"}}, {"tags": {"$in": ["green", "black"]}},
    {"tags": {"$nin": ["green", "black"]}}, {"tags": {"$gt": "green"}},
    {"$not": {"tenant": "acme"}}, {"$not": {"tags": {"$in": ["red"]}}},
    {"$or": [{"tenant": "acme"}, {"priority": {"$gt": 8}}]},
    {"$and": [{"tenant": {"$ne": "globex"}}, {"$not": {"$or": [{"flag": True}, {"score": {"$gt": 0.9}}]}}]},
    {"tenant": "acme", "flag": True}, {"missing": "x"}, {"missing": {"$ne": "x"}}, {"missing": {"$nin": ["x"]}},
]


def selfcheck(n: int = 5000, d: int = 32, queries: int = 20, k: int = 10, seed: int = 0) -> int:
    """Exact search vs a NumPy oracle, filter translation vs a NumPy evaluator, HNSW recall."""
    X, cols, meta, centers, base = _synthetic(n, d, seed)
    rng = np.random.default_rng(seed + 1)
    day = US_PER_DAY
    K = base + 380 * day
    qs = centers[rng.integers(0, len(centers), queries)] + 0.7 * rng.normal(size=(queries, d))
    qs = (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)
    Ts = base + rng.integers(60 * day, 400 * day, queries)
    X64 = X.astype(np.float64)
    norms2 = np.einsum("ij,ij->i", X64, X64)
    meta_lists = {name: (kind, _column(kind, vals, n, name)) for name, (kind, vals) in meta.items()}
    failures = 0
    t0 = time.perf_counter()
    with PgPeer(verbose=True) as pg:
        start_s = time.perf_counter() - t0
        tl = pg.load(cols["id"], X, cols["valid_from"], cols["valid_to"], cols["ingested_at"], cols["retracted_at"],
                     cols["observed_at"], cols["reliability"], cols["beta"], meta)
        print(f"versions: {pg.versions}")
        print(f"start {start_s:.2f} s; load {n} x {d}: " + ", ".join(f"{k_} {v:.2f} s" for k_, v in tl.items()))

        # 1. the filter translation, row sets against the NumPy evaluator (no time predicate)
        bad = 0
        id_of = cols["id"]
        for w in TRANSLATION_CASES:
            sql, p = pg.where_to_sql(w)
            got = np.sort(np.array([r[0] for r in pg.conn.execute(f"SELECT id FROM items WHERE {sql}", p)], np.int64))
            want = np.sort(id_of[_np_where(w, meta_lists, n)])
            if not np.array_equal(got, want):
                bad += 1
                print(f"  FILTER MISMATCH {w}: sql {sql} -> {got.size} rows, numpy {want.size}")
        print(f"filter translation: {len(TRANSLATION_CASES) - bad}/{len(TRANSLATION_CASES)} row sets identical")
        failures += bad

        # 2. search_exact against the oracle; 3. search_hnsw recall (planner's plan and forced HNSW)
        ex_t, hn_t, hf_t = [], [], []
        identical = near = wrong = 0
        ties_seen = 0
        rec_plan, rec_forced = [], []
        C, ef = 100, 100
        plans = {}
        for fi, w in enumerate(FILTERS):
            mask = _np_where(w, meta_lists, n)
            for qi in range(queries):
                q, T = qs[qi], int(Ts[qi])
                want, score, ok = _np_exact(X64, norms2, q, k, T, K, cols, mask)
                s0 = time.perf_counter()
                got = pg.search_exact(q, k, T, K, w)
                ex_t.append(time.perf_counter() - s0)
                row_of = {int(i): r for r, i in enumerate(cols["id"])}
                if np.array_equal(got, want):
                    identical += 1
                    srt = score[[row_of[int(i)] for i in want]]
                    ties_seen += int(np.sum(srt[1:] == srt[:-1]))
                elif _within_noise(got, want, score, ok, cols["id"], row_of):
                    near += 1
                else:
                    wrong += 1
                    print(f"  EXACT MISMATCH filter {fi} query {qi}: {got.tolist()} vs {want.tolist()}")
                s0 = time.perf_counter()
                h = pg.search_hnsw(q, k, T, K, w, ef_search=ef, candidates=C)
                hn_t.append(time.perf_counter() - s0)
                s0 = time.perf_counter()
                hf = pg.search_hnsw(q, k, T, K, w, ef_search=ef, candidates=C, force_hnsw=True)
                hf_t.append(time.perf_counter() - s0)
                if want.size:
                    rec_plan.append(len(np.intersect1d(h, want)) / want.size)
                    rec_forced.append(len(np.intersect1d(hf, want)) / want.size)
            q, T = qs[0], int(Ts[0])
            ex_plan = pg.explain_exact(q, k, T, K, w)
            plans[fi] = (pg.uses_hnsw(q, k, T, K, w, ef_search=ef, candidates=C),
                         pg.uses_hnsw(q, k, T, K, w, ef_search=ef, candidates=C, force_hnsw=True),
                         "items_hnsw" in ex_plan, int(mask.mean() * 1000) / 10)
        total = len(FILTERS) * queries
        print(f"search_exact vs NumPy oracle: {identical}/{total} identical id lists "
              f"({ties_seen} exact score ties inside them, broken by id), {near} differ only inside float "
              f"noise (|score diff| <= 1e-6), {wrong} wrong")
        failures += wrong
        for fi, (plan_h, forced_h, exact_h, sel) in plans.items():
            print(f"  filter {fi} (metadata selectivity {sel}%): search_hnsw plan uses HNSW: {plan_h}; "
                  f"force_hnsw: {forced_h}; search_exact plan uses HNSW: {exact_h}")
            if exact_h or not forced_h:
                failures += 1
                print("  PLAN CHECK FAILED")
        r_plan, r_forced = float(np.mean(rec_plan)), float(np.mean(rec_forced))
        print(f"search_hnsw recall@{k} vs exact (C={C}, ef_search={ef}): planner's plan {r_plan:.3f}, "
              f"forced HNSW {r_forced:.3f}")
        if r_forced < 0.9 or r_plan < 0.9:
            failures += 1
            print("  RECALL BELOW 0.9")
        ms = lambda a: f"median {np.median(a) * 1e3:.2f} ms, mean {np.mean(a) * 1e3:.2f} ms"  # noqa: E731
        print(f"per query ({total} queries, k={k}): search_exact {ms(ex_t)}; search_hnsw {ms(hn_t)}; "
              f"search_hnsw force_hnsw {ms(hf_t)}")
    print("selfcheck:", "OK" if failures == 0 else f"FAILED ({failures})")
    return 0 if failures == 0 else 1


def scale(n: int, d: int, queries: int = 20, seed: int = 0) -> int:
    """Time a load of n x d random unit vectors (5 metadata columns) and a few queries."""
    X, cols, meta, centers, base = _synthetic(n, d, seed)
    rng = np.random.default_rng(seed + 1)
    K = base + 380 * US_PER_DAY
    qs = X[rng.integers(0, n, queries)]
    Ts = base + rng.integers(60 * US_PER_DAY, 400 * US_PER_DAY, queries)
    with PgPeer(verbose=True) as pg:
        tl = pg.load(cols["id"], X, cols["valid_from"], cols["valid_to"], cols["ingested_at"], cols["retracted_at"],
                     cols["observed_at"], cols["reliability"], cols["beta"], meta)
        print(f"versions: {pg.versions}")
        print(f"load {n} x {d}: " + ", ".join(f"{k_} {v:.1f} s" for k_, v in tl.items()))
        size = pg.conn.execute("SELECT pg_size_pretty(pg_table_size('items')), "
                               "pg_size_pretty(pg_relation_size('items_hnsw'))").fetchone()
        print(f"table {size[0]}, HNSW index {size[1]}")
        for name, w in (("no filter", None), ("tenant=acme", {"tenant": "acme"}), ("", FILTERS[2])):
            ex, hn, rec = [], [], []
            for i in range(queries):
                s0 = time.perf_counter()
                want = pg.search_exact(qs[i], 10, int(Ts[i]), K, w)
                ex.append(time.perf_counter() - s0)
                s0 = time.perf_counter()
                got = pg.search_hnsw(qs[i], 10, int(Ts[i]), K, w, ef_search=100, candidates=100)
                hn.append(time.perf_counter() - s0)
                rec.append(len(np.intersect1d(got, want)) / max(1, want.size))
            print(f"  {name or w}: exact median {np.median(ex) * 1e3:.1f} ms; hnsw (C=100, ef=100, planner's plan "
                  f"{'HNSW' if pg.uses_hnsw(qs[0], 10, int(Ts[0]), K, w, ef_search=100) else 'not HNSW'}) "
                  f"median {np.median(hn) * 1e3:.1f} ms, recall@10 {np.mean(rec):.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--selfcheck", action="store_true", help="5k x 32 checks against NumPy (the default)")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", metavar="N,D", help="time a load of N x D (e.g. 200000,384) and a few queries")
    a = ap.parse_args(argv)
    if a.scale:
        n, d = (int(x) for x in a.scale.split(","))
        return scale(n, d, queries=a.queries, seed=a.seed)
    return selfcheck(a.n, a.dim, a.queries, seed=a.seed)


if __name__ == "__main__":
    sys.exit(main())
