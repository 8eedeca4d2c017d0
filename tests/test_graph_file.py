"""graph.bin read as untrusted input: the core's own loader
(cpp/include/chrono/graph_file.hpp) checks every header field, link list, label, level and
vector against what the store's parameters imply before any of it is used.

Each check has a crafted file that breaks only it, built from a real saved graph with the
small codec below (hnswlib 0.8.0's saveIndex layout), and must be refused with a ValueError
that starts "graph.bin:" and names what was wrong. Hostile files that hnswlib's loader took
(and crashed on, or opened wrongly) are in the same list. A subprocess applies 2,000 random
mutations: each is refused or loads into a store that searches without error; a crash fails
the test instead of killing pytest.

Run as a script (``python tests/test_graph_file.py fuzz DIR SEED COUNT``) it is that subprocess.
"""
from __future__ import annotations

import os
import stat
import struct
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import chrono_engine as ce
from chrono_engine import _core
from storefiles import snap_dir

DIM, M, N = 8, 4, 400
EFC, SEED = 32, 100
OPEN_END = np.iinfo(np.int64).max
T0, DAY = 1_600_000_000_000_000, 86_400_000_000  # rows' valid_from; queries one day later

# ----------------------------------------------------------------------------- the codec

HEADER = struct.Struct("<QQQQQQiIQQQdQ")
FIELDS = ("offsetLevel0_", "max_elements_", "cur_element_count", "size_data_per_element_", "label_offset_",
          "offsetData_", "maxlevel_", "enterpoint_node_", "maxM_", "maxM0_", "M_", "mult_", "ef_construction_")
assert HEADER.size == 96


@dataclass
class Graph:
    """A graph.bin taken apart: header fields, the level-0 block, each element's upper lists."""

    header: dict
    level0: bytearray
    upper: list[bytearray]
    tail: bytes = b""  # bytes after the last element (none in a real file)

    @classmethod
    def parse(cls, data: bytes) -> Graph:
        header = dict(zip(FIELDS, HEADER.unpack_from(data, 0)))
        n, sde = header["cur_element_count"], header["size_data_per_element_"]
        at = HEADER.size + n * sde
        level0 = bytearray(data[HEADER.size:at])
        upper = []
        for _ in range(n):
            (size,) = struct.unpack_from("<I", data, at)
            upper.append(bytearray(data[at + 4:at + 4 + size]))
            at += 4 + size
        assert at == len(data)
        return cls(header, level0, upper)

    def dump(self) -> bytes:
        h = self.header
        out = [HEADER.pack(*(h[f] for f in FIELDS)), bytes(self.level0)]
        for lists in self.upper:
            out += [struct.pack("<I", len(lists)), bytes(lists)]
        return b"".join(out) + self.tail

    def copy(self) -> Graph:
        return Graph(dict(self.header), bytearray(self.level0), [bytearray(u) for u in self.upper], self.tail)

    @property
    def n(self) -> int:
        return len(self.upper)

    @property
    def sde(self) -> int:
        return self.header["size_data_per_element_"]

    @property
    def links_bytes(self) -> int:
        return 4 + 4 * self.header["maxM_"]

    def level(self, i: int) -> int:
        return len(self.upper[i]) // self.links_bytes

    def record(self, i: int, level: int) -> tuple[bytearray, int]:
        """(buffer, offset) of element i's link record at `level`."""
        if level == 0:
            return self.level0, i * self.sde
        return self.upper[i], (level - 1) * self.links_bytes

    def links(self, i: int, level: int) -> list[int]:
        buf, at = self.record(i, level)
        (count,) = struct.unpack_from("<H", buf, at)
        return list(struct.unpack_from(f"<{count}I", buf, at + 4))

    def set_links(self, i: int, level: int, ids: list[int], count: int | None = None) -> None:
        buf, at = self.record(i, level)
        struct.pack_into("<H", buf, at, len(ids) if count is None else count)
        struct.pack_into(f"<{len(ids)}I", buf, at + 4, *ids)

    def label(self, i: int) -> int:
        return struct.unpack_from("<Q", self.level0, i * self.sde + self.header["label_offset_"])[0]

    def set_label(self, i: int, label: int) -> None:
        struct.pack_into("<Q", self.level0, i * self.sde + self.header["label_offset_"], label)

    def vector(self, i: int) -> np.ndarray:
        at = i * self.sde + self.header["offsetData_"]
        dim = (self.header["label_offset_"] - self.header["offsetData_"]) // 4
        return np.frombuffer(self.level0, np.float32, dim, at).copy()

    def set_vector(self, i: int, v: np.ndarray) -> None:
        at = i * self.sde + self.header["offsetData_"]
        self.level0[at:at + 4 * len(v)] = np.asarray(v, np.float32).tobytes()

    def element_of_level(self, level: int, *, exactly: bool = True) -> int:
        return next(i for i in range(self.n) if (self.level(i) == level if exactly else self.level(i) >= level))


# ----------------------------------------------------------------------------- stores

def _rows(rng: np.random.Generator, n: int, scale: float = 1.0) -> dict:
    return {"vector": (rng.normal(size=(n, DIM)) * scale).astype(np.float32),
            "valid_from": np.full(n, T0, np.int64).astype("datetime64[us]")}


def _saved(tmp: Path, metric: str, n: int = N, seed: int = 0) -> tuple[bytes, dict]:
    """graph.bin's bytes and the metadata columns of a store of n rows built through the API."""
    eng = ce.Engine(DIM, metric=metric, M=M, ef_construction=EFC, threads=1)
    if n:
        eng.ingest(_rows(np.random.default_rng(seed), n))
    store = tmp / f"{metric}-{n}-{seed}"
    eng.save(store)
    return (snap_dir(store) / "graph.bin").read_bytes(), eng.columns()


def restore(core, path, cols: dict, metric: str = "cosine", m: int = M, **kw):
    """A new core Store of this test's shape, restored from graph file `path`, as
    chrono_engine.storage.restore calls it."""
    st = core.Store(DIM, metric, m, EFC, SEED)
    st.restore(str(path), cols["valid_from"], cols["valid_to"], cols["observed_at"], cols["ingested_at"],
               cols["retracted_at"], cols["version"], cols["reliability"], cols["stem"], cols["fact_type"],
               cols["deprecated"], cols["id"], **kw)
    return st


def graph_search(st, queries: np.ndarray, k: int = 5, exact: bool = False) -> dict:
    """search_batch forced onto the HNSW graph (scan_limit 0) unless exact."""
    nq = len(queries)
    full = lambda v: np.full(nq, v, np.int64)  # noqa: E731
    params = _core.SearchParams(mode=3, fusion=0, alpha=0.75, tau=0.0, deprecated=2, future=2, deprecation_penalty=1.0,
                                arbitrate=False, type_mask=None, k=k, exact=exact, ef=32, ef_max=256, scan_limit=0,
                                seed_ef=0, seed_min=10**9, group=64, scan=0)
    return st.search_batch(np.ascontiguousarray(queries, np.float32), full(T0 + DAY), full(OPEN_END - 1), full(0),
                           full(0), params, 1)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    data, cols = _saved(tmp_path_factory.mktemp("graph"), "cosine")
    return Graph.parse(data), cols


@pytest.fixture(scope="module")
def base_ip(tmp_path_factory):
    data, cols = _saved(tmp_path_factory.mktemp("graph_ip"), "ip")
    return Graph.parse(data), cols


# ----------------------------------------------------------------------------- crafted files
# Each case: (name, mutate(graph) -> Graph | bytes, words the message must hold). The
# mutation breaks one rule and leaves the rest as saveIndex wrote them.

def _hdr(**fields):
    def f(g: Graph) -> Graph:
        g.header.update(fields)
        return g
    return f


def _hdr_fn(field, fn):
    def f(g: Graph) -> Graph:
        g.header[field] = fn(g)
        return g
    return f


def _level0_byte(offset: int, value: int):
    def f(g: Graph) -> Graph:
        g.level0[7 * g.sde + offset] = value
        return g
    return f


def _level0_count(g: Graph) -> Graph:
    g.set_links(7, 0, g.links(7, 0), count=2 * M + 1)
    return g


def _level0_id(g: Graph) -> Graph:
    g.set_links(7, 0, [123456] + g.links(7, 0)[1:])
    return g


def _level0_id_n(g: Graph) -> Graph:
    g.set_links(7, 0, g.links(7, 0)[:-1] + [g.n])
    return g


def _label_out_of_range(g: Graph) -> Graph:
    g.set_label(5, g.n)
    return g


def _label_twice(g: Graph) -> Graph:
    g.set_label(5, g.label(6))
    return g


def _vector(fn):
    def f(g: Graph) -> Graph:
        g.set_vector(9, fn(g.vector(9)))
        return g
    return f


def _size_not_multiple(g: Graph) -> Graph:
    i = g.element_of_level(1)
    g.upper[i] += b"\0"
    return g


def _level_above_max(g: Graph) -> Graph:
    i = g.element_of_level(1)
    g.upper[i] = bytearray(g.links_bytes * (g.header["maxlevel_"] + 1))
    return g


def _maxlevel_below_an_element(g: Graph) -> Graph:
    g.header["maxlevel_"] -= 1
    return g


def _maxlevel_above_every_element(g: Graph) -> Graph:
    g.header["maxlevel_"] += 1
    return g


def _entry_point_low(g: Graph) -> Graph:
    g.header["enterpoint_node_"] = g.element_of_level(0)
    return g


def _upper_count(g: Graph) -> Graph:
    i = g.element_of_level(1, exactly=False)
    g.set_links(i, 1, g.links(i, 1), count=M + 1)
    return g


def _upper_id(g: Graph) -> Graph:
    i = g.element_of_level(1, exactly=False)
    g.set_links(i, 1, [g.n + 5] + g.links(i, 1)[1:])
    return g


def _upper_reserved(g: Graph) -> Graph:
    i = g.element_of_level(1, exactly=False)
    buf, at = g.record(i, 1)
    buf[at + 2] = 1
    return g


def _neighbour_below(level: int):
    def f(g: Graph) -> Graph:
        i = g.element_of_level(level, exactly=False)
        g.set_links(i, level, [g.element_of_level(level - 1)] + g.links(i, level)[1:])
        return g
    return f


def _trailing(extra: bytes):
    def f(g: Graph) -> Graph:
        g.tail = extra
        return g
    return f


def _truncated(keep):
    return lambda g: g.dump()[:keep(g)]


CASES = [
    ("offsetLevel0_", _hdr(offsetLevel0_=8), ["offsetLevel0_"]),
    ("cur_element_count above n", _hdr_fn("cur_element_count", lambda g: g.n + 1), ["cur_element_count"]),
    ("cur_element_count below n", _hdr_fn("cur_element_count", lambda g: g.n - 1), ["cur_element_count"]),
    ("max_elements_ below n (heap overflow in hnswlib)", _hdr_fn("max_elements_", lambda g: g.n // 4),
     ["max_elements_", "below the element count"]),
    ("size_data_per_element_", _hdr_fn("size_data_per_element_", lambda g: g.sde + 4), ["size_data_per_element_"]),
    ("label_offset_", _hdr_fn("label_offset_", lambda g: g.header["label_offset_"] - 4), ["label_offset_"]),
    ("offsetData_", _hdr_fn("offsetData_", lambda g: g.header["offsetData_"] + 4), ["offsetData_"]),
    ("maxM_", _hdr(maxM_=M + 1), ["maxM_"]),
    ("maxM0_ (level-0 lists overrun the record)", _hdr(maxM0_=4 * M), ["maxM0_"]),
    ("M_", _hdr(M_=M * 2), ["M_"]),
    ("mult_ nan", _hdr(mult_=float("nan")), ["mult_", "not finite"]),
    ("mult_ inf", _hdr(mult_=float("inf")), ["mult_", "not finite"]),
    ("maxlevel_ huge", _hdr(maxlevel_=1 << 30), ["maxlevel_", "outside [0, 63]"]),
    ("maxlevel_ 64", _hdr(maxlevel_=64), ["maxlevel_", "outside [0, 63]"]),
    ("maxlevel_ negative", _hdr(maxlevel_=-1), ["maxlevel_", "outside"]),
    ("maxlevel_ below an element's level", _maxlevel_below_an_element, ["level", "above maxlevel_"]),
    ("maxlevel_ above every element's level", _maxlevel_above_every_element,
     ["maxlevel_", "highest element level"]),
    ("enterpoint_node_ out of range", _hdr_fn("enterpoint_node_", lambda g: g.n + 1000),
     ["enterpoint_node_", "out of range"]),
    ("enterpoint_node_ 2^32-1", _hdr(enterpoint_node_=0xFFFFFFFF), ["enterpoint_node_", "out of range"]),
    ("enterpoint_node_ of a lower level", _entry_point_low, ["enterpoint_node_", "not of maxlevel_"]),
    ("level-0 link count above maxM0", _level0_count, ["element 7, level 0", "more than maxM0"]),
    ("level-0 neighbour id out of range", _level0_id,
     ["element 7, level 0: neighbour id 123456 out of range (n = 400)"]),
    ("level-0 neighbour id n", _level0_id_n, ["element 7, level 0: neighbour id 400 out of range"]),
    ("deleted flag", _level0_byte(2, 1), ["element 7, level 0", "deleted flag"]),
    ("level-0 reserved byte", _level0_byte(3, 9), ["element 7, level 0", "reserved byte"]),
    ("label out of range", _label_out_of_range, ["element 5", "label 400 out of range"]),
    ("label twice", _label_twice, ["element 5", "repeats element"]),
    ("vector nan", _vector(lambda v: np.where(np.arange(DIM) == 3, np.nan, v)),
     ["element 9", "component 3", "not finite"]),
    ("vector inf", _vector(lambda v: np.where(np.arange(DIM) == 0, np.inf, v)),
     ["element 9", "component 0", "not finite"]),
    ("vector not unit (cosine)", _vector(lambda v: v * 1.001), ["element 9", "unit length"]),
    ("vector zero (cosine)", _vector(lambda v: v * 0), ["element 9", "unit length"]),
    ("link-list size not a multiple", _size_not_multiple, ["link-list size", "not a multiple"]),
    ("element level above maxlevel_", _level_above_max, ["above maxlevel_"]),
    ("upper link count above maxM", _upper_count, ["level 1", "more than maxM"]),
    ("upper neighbour id out of range", _upper_id, ["level 1: neighbour id 405 out of range"]),
    ("upper reserved bytes", _upper_reserved, ["level 1", "reserved bytes"]),
    ("level-1 neighbour of level 0", _neighbour_below(1), ["level 1: neighbour", "has level 0, below 1"]),
    ("level-2 neighbour of level 1", _neighbour_below(2), ["level 2: neighbour", "has level 1, below 2"]),
    ("trailing byte", _trailing(b"\0"), ["trailing bytes"]),
    ("trailing record", _trailing(bytes(4 + 4 * (M + 1))), ["trailing bytes"]),
    ("trailing megabyte", _trailing(bytes(1 << 20)), ["bytes; its header allows"]),
    ("empty file", _truncated(lambda g: 0), ["shorter than the 96-byte header"]),
    ("header only", _truncated(lambda g: 96), ["bytes; its header allows"]),
    ("truncated in level 0", _truncated(lambda g: 96 + g.sde * g.n // 2), ["bytes; its header allows"]),
    ("truncated by one byte", _truncated(lambda g: len(g.dump()) - 1), ["file ends"]),
]


def _words_ok(msg: str, words) -> bool:
    return msg.startswith("graph.bin: ") and all(w in msg for w in words)


@pytest.mark.parametrize("name,mutate,words", CASES, ids=[c[0] for c in CASES])
def test_crafted_graph_is_refused(tmp_path, base, name, mutate, words):
    g, cols = base
    out = mutate(g.copy())
    path = tmp_path / "graph.bin"
    path.write_bytes(out if isinstance(out, bytes) else out.dump())
    st = _core.Store(DIM, "cosine", M, EFC, SEED)
    with pytest.raises(ValueError) as info:
        st.restore(str(path), cols["valid_from"], cols["valid_to"], cols["observed_at"], cols["ingested_at"],
                   cols["retracted_at"], cols["version"], cols["reliability"], cols["stem"], cols["fact_type"],
                   cols["deprecated"], cols["id"])
    assert _words_ok(str(info.value), words), str(info.value)
    # nothing of it stayed: the same store then takes the real file
    assert st.size == 0
    path.write_bytes(g.dump())
    st.restore(str(path), cols["valid_from"], cols["valid_to"], cols["observed_at"], cols["ingested_at"],
               cols["retracted_at"], cols["version"], cols["reliability"], cols["stem"], cols["fact_type"],
               cols["deprecated"], cols["id"])
    assert st.size == g.n
    assert len(graph_search(st, np.eye(DIM, dtype=np.float32))["row"]) == 5 * DIM


def test_a_graph_of_another_shape_is_refused(tmp_path, base):
    g, cols = base
    path = tmp_path / "graph.bin"
    path.write_bytes(g.dump())
    with pytest.raises(ValueError, match=r"^graph.bin: header field maxM_ = 4, expected 6"):
        restore(_core, path, cols, m=6)
    other = ce.Engine(DIM + 4, M=M, ef_construction=EFC, threads=1)
    other.ingest({"vector": np.ones((N, DIM + 4), np.float32), "valid_from": ["2024-01-01"] * N})
    other.save(tmp_path / "other")
    path.write_bytes((snap_dir(tmp_path / "other") / "graph.bin").read_bytes())
    with pytest.raises(ValueError, match=r"^graph.bin: header field size_data_per_element_"):
        restore(_core, path, cols)
    with pytest.raises(ValueError, match=r"^graph.bin: header field cur_element_count = 400, expected 399"):
        path.write_bytes(g.dump())
        restore(_core, path, {k: v[:-1] for k, v in cols.items()})


def big_graph_small_max_elements(tmp: Path) -> bytes:
    """A genuine graph of 1,100 elements with max_elements_ rewritten to 10: with metadata of
    fewer rows hnswlib's loader sizes its block by max_elements_ and reads 1,100 records
    into it (a heap overflow)."""
    data, _ = _saved(tmp, "cosine", n=1100, seed=5)
    g = Graph.parse(data)
    g.header["max_elements_"] = 10
    return g.dump()


def test_heap_overflow_file_is_refused(tmp_path, base):
    _, cols = base
    path = tmp_path / "graph.bin"
    path.write_bytes(big_graph_small_max_elements(tmp_path))
    with pytest.raises(ValueError, match=r"^graph.bin: header field cur_element_count = 1100, expected 400"):
        restore(_core, path, cols)


def test_ignored_header_fields_are_ignored(tmp_path, base):
    """max_elements_ above n, ef_construction_ and mult_'s value are hnswlib settings the
    store sets itself: any value loads, and searches as the original."""
    g, cols = base
    path = tmp_path / "graph.bin"
    path.write_bytes(g.dump())
    want = graph_search(restore(_core, path, cols), np.eye(DIM, dtype=np.float32))
    odd = g.copy()
    odd.header.update(max_elements_=2**64 - 1, ef_construction_=0, mult_=-3.5)
    path.write_bytes(odd.dump())
    got = graph_search(restore(_core, path, cols), np.eye(DIM, dtype=np.float32))
    np.testing.assert_array_equal(got["id"], want["id"])
    np.testing.assert_array_equal(got["score"], want["score"])


def test_ip_store_vectors(tmp_path, base_ip):
    """Under ip and l2 the rule is ingest's: finite components (any norm, even one whose float
    sum of squares overflows)."""
    g, cols = base_ip
    path = tmp_path / "graph.bin"
    nan = g.copy()
    nan.set_vector(3, np.full(DIM, np.nan))
    path.write_bytes(nan.dump())
    with pytest.raises(ValueError, match=r"^graph.bin: element 3: vector component 0 is not finite"):
        restore(_core, path, cols, "ip")
    big = g.copy()
    big.set_vector(3, np.full(DIM, 3e38, np.float32))
    path.write_bytes(big.dump())
    st = restore(_core, path, cols, "ip")
    assert len(graph_search(st, np.eye(DIM, dtype=np.float32))["row"]) == 5 * DIM
    np.testing.assert_array_equal(st.vectors(np.array([big.label(3)], np.uint32))[0], np.full(DIM, 3e38, np.float32))


def test_empty_graph(tmp_path):
    data, cols = _saved(tmp_path, "cosine", n=0)
    g = Graph.parse(data)
    assert (g.header["maxlevel_"], g.header["enterpoint_node_"]) == (-1, 0xFFFFFFFF)
    path = tmp_path / "graph.bin"
    path.write_bytes(data)
    st = restore(_core, path, cols)
    assert st.size == 0
    for field, value in (("maxlevel_", 0), ("enterpoint_node_", 0)):
        bad = g.copy()
        bad.header[field] = value
        path.write_bytes(bad.dump())
        with pytest.raises(ValueError, match=r"^graph.bin: an empty graph must have maxlevel_ = -1"):
            restore(_core, path, cols)


def test_engine_round_trip(tmp_path):
    """Through Engine.save / Engine.open: identical search results."""
    rng = np.random.default_rng(4)
    eng = ce.Engine(DIM, M=M, ef_construction=EFC, threads=1, scan_limit=0)
    eng.ingest(_rows(rng, 600))
    eng.save(tmp_path / "s")
    back = ce.Engine.open(tmp_path / "s", threads=1)
    for q in rng.normal(size=(10, DIM)).astype(np.float32):
        a = eng.search(q, k=7, mode="all")
        b = back.search(q, k=7, mode="all")
        assert a.column("id").to_pylist() == b.column("id").to_pylist()
        assert a.column("score").to_pylist() == b.column("score").to_pylist()


_SPECIAL_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    from chrono_engine import _core
    d = sys.argv[1]
    z = np.zeros(1, np.int64)
    for name in sorted(os.listdir(d)):
        st = _core.Store(4, "cosine", 4, 16, 1)
        try:
            st.restore(os.path.join(d, name), z, z + 1, z, z, z + np.iinfo(np.int64).max, z.astype(np.uint64),
                       np.ones(1, np.float32), z.astype(np.int32) - 1, z.astype(np.uint16), z.astype(np.uint8),
                       z.astype(np.uint64))
            print(name, "LOADED")
        except (ValueError, RuntimeError) as e:
            print(name, type(e).__name__, e)
""")


@pytest.mark.slow
def test_special_files_are_refused_without_blocking(tmp_path):
    """A FIFO (open would block), a symlink to /dev/zero (endless), a directory, a device:
    refused at once, in a child process so that a hang fails the test."""
    d = tmp_path / "files"
    d.mkdir()
    os.mkfifo(d / "fifo")
    os.symlink("/dev/zero", d / "link_dev_zero")
    (d / "real").write_bytes(b"x" * 200)
    os.symlink(d / "real", d / "link_regular")
    (d / "directory").mkdir()
    proc = subprocess.run([sys.executable, "-c", _SPECIAL_SCRIPT, str(d)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # cwd: not the source tree (no compiled core)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert out["fifo"] == "ValueError graph.bin: is not a regular file (a FIFO)"
    assert out["link_dev_zero"].startswith("ValueError graph.bin: is a symbolic link")
    assert out["link_regular"].startswith("ValueError graph.bin: is a symbolic link")
    assert out["directory"] == "ValueError graph.bin: is not a regular file (a directory)"
    assert out["real"].startswith("ValueError graph.bin: header field offsetLevel0_")


def test_missing_file_is_an_os_level_error(tmp_path, base):
    _, cols = base
    with pytest.raises(RuntimeError, match="^graph.bin: cannot open .*No such file"):
        restore(_core, tmp_path / "absent.bin", cols)


# ----------------------------------------------------------------------------- random mutations

def _pick(rng: np.random.Generator, values: list):
    return values[int(rng.integers(len(values)))]


def _mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """One random damage: byte flips, a truncation, a header field rewrite, a rewritten
    size, label, link count or neighbour id, or appended bytes."""
    g = Graph.parse(data)
    b = bytearray(data)
    kind = rng.integers(8)
    if kind == 0:
        for _ in range(rng.integers(1, 9)):
            b[rng.integers(len(b))] ^= 1 << int(rng.integers(8))
        return bytes(b)
    if kind == 1:
        return bytes(b[:rng.integers(len(b))])
    if kind == 2:
        return bytes(b) + rng.bytes(int(rng.integers(1, 200)))
    if kind == 3:
        field = FIELDS[rng.integers(len(FIELDS))]
        if field == "mult_":
            value = _pick(rng, [np.nan, np.inf, -1.0, 0.0, 1e300])
        elif field in ("maxlevel_",):
            value = _pick(rng, [-2**31, -1, 0, 1, 2, 5, 63, 64, 2**31 - 1])
        elif field == "enterpoint_node_":
            value = _pick(rng, [0, 1, g.n - 1, g.n, 2**32 - 1, int(rng.integers(2**32))])
        else:
            old = g.header[field]
            value = _pick(rng, [0, 1, old - 1, old + 1, old * 2, old // 2, 2**63, 2**64 - 1,
                                int(rng.integers(2**63))]) % 2**64
        g.header[field] = value
        return g.dump()
    i = int(rng.integers(g.n))
    if kind == 4:  # an element's upper-level size
        at = 96 + g.n * g.sde + sum(4 + len(u) for u in g.upper[:i])
        struct.pack_into("<I", b, at, _pick(rng, [0, g.links_bytes, 2 * g.links_bytes, 7, 2**32 - 1,
                                                  int(rng.integers(2**32))]))
        return bytes(b)
    if kind == 5:
        g.set_label(i, _pick(rng, [0, i, g.n - 1, g.n, 2**64 - 1]))
        return g.dump()
    level = int(rng.integers(g.level(i) + 1))
    buf, at = g.record(i, level)
    if kind == 6:  # a link count
        struct.pack_into("<H", buf, at, _pick(rng, [0, M, M + 1, 2 * M, 2 * M + 1, 65535]))
    else:  # a neighbour id (used slot or not)
        slots = 2 * M if level == 0 else M
        struct.pack_into("<I", buf, at + 4 + 4 * int(rng.integers(slots)),
                         _pick(rng, [0, i, g.n - 1, g.n, 2**32 - 1, int(rng.integers(g.n))]))
    return g.dump()


def _fuzz(workdir: Path, seed: int, count: int) -> None:
    data, cols = _saved(workdir, "cosine", n=60, seed=seed)
    rng = np.random.default_rng(seed)
    path = workdir / "mutant.bin"
    q = rng.normal(size=(8, DIM)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    refused = loaded = 0
    for _ in range(count):
        path.write_bytes(_mutate(data, rng))
        try:
            st = restore(_core, path, cols)
        except ValueError as e:
            assert str(e).startswith("graph.bin: "), str(e)
            refused += 1
            continue
        graph_search(st, q, 10)
        graph_search(st, q, 10, exact=True)
        loaded += 1
    print(f"refused {refused} loaded {loaded}")


@pytest.mark.slow
def test_random_mutations_never_crash(tmp_path):
    proc = subprocess.run([sys.executable, __file__, "fuzz", str(tmp_path), "20", "2000"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"rc {proc.returncode}: {proc.stderr[-3000:]}"
    refused, loaded = (int(x) for x in proc.stdout.split()[1::2])
    assert refused + loaded == 2000
    assert refused > 1000  # most damage is caught (the rest lands in bytes no rule covers: unused slots)


def test_file_mode_is_untouched(tmp_path, base):
    """The loader only reads: a read-only file loads."""
    g, cols = base
    path = tmp_path / "graph.bin"
    path.write_bytes(g.dump())
    path.chmod(stat.S_IRUSR)
    assert restore(_core, path, cols).size == g.n


if __name__ == "__main__":
    if sys.argv[1] == "fuzz":
        _fuzz(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
