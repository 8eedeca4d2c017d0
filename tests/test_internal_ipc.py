"""chrono_engine._ipc.read_stream on hostile bytes: what a stream decodes to is sized before
it is decompressed or expanded, and damaged streams are StreamErrors, never another error."""
from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from chrono_engine._ipc import LayoutError, StreamError, TooLarge, expanded_bytes, read_stream


def _ipc(table, compression=None):
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression=compression)) as w:
        w.write_table(table)
    return sink.getvalue()


def _table():
    return pa.table({"vector": pa.array(np.ones((3, 4), np.float32).tolist(), pa.list_(pa.float32(), 4)),
                     "title": pa.array(["a", "bb", None]).dictionary_encode(),
                     "content": pa.array(["q" * 50, None, "r"], pa.string_view())})


@pytest.mark.parametrize("compression", [None, "zstd", "lz4"])
def test_a_stream_within_the_limit_reads_as_written(compression):
    t = _table()
    assert read_stream(_ipc(t, compression), 10_000).equals(t)


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_compressed_buffers_are_sized_before_they_are_decompressed(compression):
    body = _ipc(pa.table({"t": pa.array(["x" * (64 << 20)])}), compression)
    assert len(body) < 1 << 20
    with pytest.raises(TooLarge, match="its buffers, decompressed,") as info:  # from the lengths alone
        read_stream(body, 16 << 20)
    assert info.value.size >= 64 << 20 and info.value.limit == 16 << 20


def test_dictionaries_nested_ones_and_views_count_as_expanded():
    d = pa.DictionaryArray.from_arrays(pa.array(np.zeros(1000, np.int32)), pa.array(["y" * 1000]))
    assert expanded_bytes(pa.table({"d": d})) >= 1000 * 1000
    nested = pa.ListArray.from_arrays(pa.array([0, 500, 1000], pa.int32()), d)
    assert expanded_bytes(pa.table({"n": nested})) >= 1000 * 1000
    with pytest.raises(TooLarge):
        read_stream(_ipc(pa.table({"n": nested})), 100_000)
    dd = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array([[1, 2]], pa.list_(pa.int64())))
    with pytest.raises(LayoutError, match="dictionary of list"):
        read_stream(_ipc(pa.table({"dd": dd})), 100_000)


def test_damaged_streams_are_stream_errors():
    rng = np.random.default_rng(3)
    for compression in (None, "zstd", "lz4"):
        good = _ipc(_table(), compression)
        for cut in range(0, len(good), 7):
            try:
                read_stream(good[:cut], 1 << 20)
            except (StreamError, TooLarge):
                pass
        for _ in range(500):
            b = bytearray(good)
            for j in rng.integers(0, len(b), int(rng.integers(1, 4))):
                b[j] = int(rng.integers(0, 256))
            try:
                read_stream(bytes(b), 1 << 20)
            except (StreamError, TooLarge):
                pass
