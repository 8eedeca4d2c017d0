"""Arrow IPC streams from untrusted bytes (a request body), with what they decode to
bounded before anything is decompressed or expanded (internal).

The bytes of an IPC stream do not bound what it decodes to: buffers compressed with zstd or
LZ4 (4.9 kB carried a 128 MiB string), a dictionary whose one long value every row repeats
once decoded, string views that all point into one long value. :func:`read_stream` reads
each message's metadata first and refuses a stream whose buffers would decompress past the
limit (each compressed buffer starts with its uncompressed length); then it reads the
stream and refuses one whose columns, every dictionary and view expanded as the ingest's
conversions expand them, would pass it; only then is the table validated in full (which
reads every view's bytes). Layouts whose expansion it does not bound (run-end encoded,
list views, unions) are refused by name.
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from ._args import arrow_type

__all__ = ["StreamError", "LayoutError", "TooLarge", "read_stream", "check_compressed", "expanded_bytes"]

# MessageHeader union codes (format/Message.fbs)
_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3


class StreamError(ValueError):
    """Bytes that are not a readable IPC stream, or a layout this reader does not take."""


class LayoutError(StreamError):
    """A column of a layout :func:`read_stream` does not take (run-end encoded, list views,
    unions, dictionaries of nested values): it does not bound what they expand to."""


class TooLarge(ValueError):
    """A stream that decodes to more than the limit; ``size`` is what it decodes to (or
    at least that much), ``limit`` the limit."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} decode to {size} bytes, beyond the limit of {limit}")
        self.size, self.limit = size, limit


# ----------------------------------------------------------------------------- metadata

def _field(meta: bytes, table: int, i: int) -> int | None:
    """Where field ``i`` of the flatbuffer table at ``table`` is (None: absent)."""
    vtable = table - struct.unpack_from("<i", meta, table)[0]
    if not (0 <= table < len(meta) and 0 <= vtable < len(meta)):  # unpack_from reads a negative offset from the end
        raise StreamError("a message's metadata points outside itself")
    size = struct.unpack_from("<H", meta, vtable)[0]
    if 4 + 2 * i + 2 > size:
        return None
    off = struct.unpack_from("<H", meta, vtable + 4 + 2 * i)[0]
    return table + off if off else None


def _target(meta: bytes, at: int) -> int:
    """The table or vector an offset field at ``at`` points to."""
    return at + struct.unpack_from("<I", meta, at)[0]


def _decoded_body(meta: bytes, body: pa.Buffer | None) -> int:
    """The bytes a message's body decodes to: its size, or, for a record or dictionary
    batch with compressed buffers, the sum of the uncompressed lengths each buffer starts
    with (-1: a buffer stored as is)."""
    size = 0 if body is None else body.size
    root = struct.unpack_from("<I", meta, 0)[0]
    kind_at, header_at = _field(meta, root, 1), _field(meta, root, 2)
    kind = meta[kind_at] if kind_at is not None else 0
    if kind not in (_DICTIONARY_BATCH, _RECORD_BATCH) or header_at is None:
        return size
    batch = _target(meta, header_at)
    if kind == _DICTIONARY_BATCH:  # DictionaryBatch.data: the RecordBatch
        data_at = _field(meta, batch, 1)
        if data_at is None:
            return size
        batch = _target(meta, data_at)
    buffers_at = _field(meta, batch, 2)
    if _field(meta, batch, 3) is None or buffers_at is None:  # RecordBatch.compression absent
        return size
    vec = _target(meta, buffers_at)
    n = struct.unpack_from("<I", meta, vec)[0]
    spans = np.frombuffer(meta, "<i8", count=2 * n, offset=vec + 4).reshape(n, 2)  # (offset, length)
    spans = spans[spans[:, 1] != 0]
    if (spans[:, 0] < 0).any() or (spans[:, 1] < 8).any() or (spans[:, 0] > size - spans[:, 1]).any():
        raise StreamError("a compressed buffer lies outside its message's body")
    raw = np.frombuffer(body, np.uint8)
    prefix = raw[spans[:, 0, None] + np.arange(8)].copy().view("<i8").reshape(-1)
    if (prefix < -1).any():
        raise StreamError("a compressed buffer has a negative length")
    return int(np.where(prefix == -1, spans[:, 1] - 8, prefix).sum())


def check_compressed(raw: bytes, limit: int) -> None:
    """TooLarge when the stream's message bodies decode (decompress) past ``limit``,
    judged from their metadata and the length each compressed buffer starts with."""
    reader = ipc.MessageReader.open_stream(pa.py_buffer(raw))
    total = 0
    while True:
        try:
            msg = reader.read_next_message()
        except StopIteration:
            return
        if msg is None:
            return
        try:
            total += _decoded_body(msg.metadata.to_pybytes(), msg.body)
        except (struct.error, ValueError, IndexError) as e:
            if isinstance(e, StreamError):
                raise
            raise StreamError(f"a message's metadata is malformed ({e})") from None
        if total > limit:
            raise TooLarge("its buffers, decompressed,", total, limit)


# ----------------------------------------------------------------------------- columns

def _view_lengths(arr: pa.Array) -> np.ndarray:
    """Each value's length in a string or binary view array (its 16-byte view headers)."""
    views = np.frombuffer(arr.buffers()[1], "<i4", count=4 * (arr.offset + len(arr)))
    return views.reshape(-1, 4)[arr.offset:, 0].astype(np.int64)


def _value_sizes(d: pa.Array) -> np.ndarray | None:
    """The bytes of each value of a dictionary's values once decoded (None: a type whose
    values this does not size)."""
    t = d.type
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return pc.fill_null(pc.binary_length(d), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return _view_lengths(d)
    try:
        width = t.bit_width  # a fixed-width type; ValueError for any other
    except ValueError:
        return None
    return np.full(len(d), max(1, width // 8), np.int64)


def _expanded(arr: pa.Array, name: str) -> int:
    t = arr.type
    if pa.types.is_dictionary(t):
        sizes = _value_sizes(arr.dictionary)
        if sizes is None:
            raise LayoutError(f"column {name!r}: a dictionary of {arrow_type(t.value_type)} is not taken")
        idx = arr.indices.drop_null().to_numpy().astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= len(sizes)):
            raise StreamError(f"column {name!r}: a dictionary index is out of range")
        return int(sizes[idx].sum()) + 8 * len(arr)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return int(_view_lengths(arr).sum()) + 16 * len(arr)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_map(t):
        return 8 * (len(arr) + 1) + _expanded(arr.values, name)
    if pa.types.is_struct(t):
        return len(arr) + sum(_expanded(arr.field(i), name) for i in range(t.num_fields))
    if isinstance(t, pa.BaseExtensionType):
        return _expanded(arr.storage, name)
    if pa.types.is_run_end_encoded(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t) \
            or pa.types.is_union(t):
        raise LayoutError(f"column {name!r}: Arrow type {arrow_type(t)} is not taken (an encoding that "
                          "expands when decoded; send it decoded)")
    return arr.nbytes


def expanded_bytes(table: pa.Table) -> int:
    """The bytes ``table`` takes with every dictionary decoded and every view made plain
    (an upper bound where a list's values are not all referenced); StreamError for a layout
    it does not size."""
    return sum(_expanded(chunk, name) for name, col in zip(table.column_names, table.columns)
               for chunk in col.chunks)


def read_stream(raw: bytes, limit: int) -> pa.Table:
    """The table of the IPC stream ``raw``, validated in full, if it decodes to at most
    ``limit`` bytes (its buffers decompressed, its dictionaries and views expanded):
    TooLarge otherwise, StreamError for bytes that are not a stream (Arrow's errors, and
    names that are not UTF-8) or a layout not taken."""
    try:
        check_compressed(raw, limit)
        table = ipc.open_stream(pa.py_buffer(raw)).read_all()
        table.validate()  # buffer sizes: what expanded_bytes reads is there
        size = expanded_bytes(table)
        if size > limit:
            raise TooLarge("its columns, dictionaries and views expanded,", size, limit)
        table.validate(full=True)
    except (TooLarge, StreamError):
        raise
    except (pa.ArrowException, OSError, ValueError, IndexError) as e:
        raise StreamError(f"{type(e).__name__}: {str(e)[:200]}") from None
    return table
