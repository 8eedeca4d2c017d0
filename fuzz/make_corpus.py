"""Write the seed corpora of the fuzz harnesses: fuzz/corpus/<target>/, one file per seed,
named by its SHA-1 as libFuzzer names its own. Same files on every run (no atheris needed).

    python fuzz/make_corpus.py            # all targets
    python fuzz/make_corpus.py ingest     # one

Seeds: parse_time, time phrases in Chinese and English over every function / now / zone
choice; ingest, batches recorded from a seeded generator (some entirely valid, some with a
few edge cases) and a few as Arrow IPC streams; open, each file of a small store, as saved
and re-sealed, plus truncated ones; wal, short programs of damage to a log. The CURRENT seeds name a snapshot that is not there
(each store's snapshot has a random name); the harness's own store is made at start-up.
"""
from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _store import build_store, store_files  # noqa: E402
from _tables import Recorder, build_batch, ipc_bytes, read_case  # noqa: E402

PHRASES = ("上个月的报销标准", "2024 年 8 月签订该采购合同时审批权限表是什么", "现在总监出差住宿标准是多少？",
           "近三个月", "去年第四季度", "明天下午3点", "2023年12月31日之前", "过去两周", "本周五", "三天前",
           "上世纪九十年代", "今年以来", "下个月初", "前年春节", "昨晚十一点半",
           "as of March 2024", "last month", "next Friday at 5pm", "since 2020", "before Q3 2023",
           "between 2021-01-01 and 2021-06-30", "YTD", "in the last 3 years", "yesterday at noon",
           "the week of June 3", "two weeks ago", "end of 2025", "2024-02-29T12:00:00+08:00",
           "what was the policy in effect on 12/31/2022?", "23:59", "")


def parse_time_seeds() -> list[bytes]:
    """One seed per phrase, the head byte stepping through the functions, the ordinary nows
    (fuzz_parse_time.NOWS[:4]) and the zones; the edge nows come with plain phrases only."""
    seeds = [bytes([i % 2 | (i % 4) << 1 | (i % 8) << 4]) + text.encode() for i, text in enumerate(PHRASES)]
    return seeds + [bytes([fn | now << 1]) + b"today" for fn in (0, 1) for now in (4, 5)]


def ingest_seeds() -> list[bytes]:
    """Recorded structured batches (byte 0 = 0) and Arrow IPC streams (byte 0 = 1)."""
    seeds = []
    for i in range(30):
        rec = Recorder(seed=i, p_valid=(1.0, 0.95, 0.85)[i % 3])
        read_case(rec)
        seeds.append(b"\x00" + bytes(rec.out))  # byte 0 even: structured
    i = 0
    while sum(s[0] == 1 for s in seeds) < 6:
        batch = build_batch(Recorder(seed=1000 + i, p_valid=1.0))
        i += 1
        if isinstance(batch, (pa.Table, pa.RecordBatch)) and batch.num_rows:
            seeds.append(b"\x01" + ipc_bytes(batch))
    return seeds


def open_seeds() -> list[bytes]:
    """Each file of a small store, unchanged and re-sealed, whole and cut in half."""
    tmp = Path(tempfile.mkdtemp(prefix="chrono-corpus-"))
    try:
        build_store(tmp / "s")
        seeds = []
        for index, name in enumerate(store_files(tmp / "s")):
            body = (tmp / "s" / name).read_bytes()
            if name == "CURRENT":
                body = b"snap-" + b"0" * 32  # see the module docstring
            for head in (index, index | 0x80):
                seeds += [bytes([head]) + body, bytes([head]) + body[:len(body) // 2]]
        return seeds
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def wal_seeds() -> list[bytes]:
    """Programs for fuzz_wal.py: none, one flip, cut or write at spread positions, appends,
    for a read-only and a writable open."""
    import struct
    seeds = []
    for head in (0, 1):
        seeds.append(bytes([head]))
        for op in range(3):
            for pos in (0, 40, 90, 130, 200, 700, 1500, 3000, 6000, 65535):
                seeds.append(bytes([head]) + bytes([op]) + struct.pack("<H", pos) + bytes([pos % 251]))
        seeds.append(bytes([head]) + b"\x03\x00\x00R\x03\x00\x00E\x03\x00\x00C\x03\x00\x003")
        seeds.append(bytes([head]) + b"\x00\x10\x00\x01" + b"\x01\xff\x7f\x00")
    return seeds


TARGETS = {"parse_time": parse_time_seeds, "ingest": ingest_seeds, "open": open_seeds, "wal": wal_seeds}


def write(target: str) -> int:
    """Replace fuzz/corpus/<target>/ with the target's seeds; returns how many."""
    folder = HERE / "corpus" / target
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    seeds = set(TARGETS[target]())
    for seed in seeds:
        (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    return len(seeds)


if __name__ == "__main__":
    for target in sys.argv[1:] or TARGETS:
        print(f"{target}: {write(target)} seeds")
