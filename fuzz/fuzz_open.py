"""Fuzz Engine.open: a small saved store with one file replaced by the fuzzer's bytes.

    python fuzz/fuzz_open.py -max_total_time=60 fuzz/corpus/open

At start-up a store is saved with the public API into a temporary folder (fuzz/_store.py).
Input: byte 0 chooses the file (its low 7 bits index the store's files in sorted order:
CURRENT, amend.arrow, graph.bin, log.wal, manifest.json, meta.arrow today) and, when its high bit is set, that the
checksums are recomputed after the write (:func:`_store.reseal`), so the mutation reaches
the parsers behind them; the rest is the file's new content.

Findings: any exception from Engine.open but a ChronoError (CorruptStoreError,
StorageError); a store that opens and then fails a read (len, columns, get, search); a
store that opens with data the engine never accepts at ingest (reliability outside [0, 1],
duplicate ids, valid_to <= valid_from, codes without names, non-finite vectors); and,
without re-sealing, a changed file that opens to anything but the original store (the
checksums exist to catch that).
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np

from _harness import Finding, Refused, attempt, instrumented, main, outcome

with instrumented():
    import chrono_engine as ce

from _store import build_store, reseal, store_files  # noqa: E402 (after the instrumented import)

_TMP = Path(tempfile.mkdtemp(prefix="chrono-fuzz-open-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_PRISTINE = _TMP / "pristine"
build_store(_PRISTINE)
FILES = store_files(_PRISTINE)
_CONTENT = {name: (_PRISTINE / name).read_bytes() for name in FILES}
_WORK = _TMP / "work"


def contents(eng: ce.Engine) -> tuple:
    """Everything an open store shows: parameters, metadata, strings, vectors."""
    cols = eng.columns()
    return (eng.dim, eng.metric, eng.decay.to_dict(), eng.params, len(eng), eng.fact_types, eng.stems,
            {k: v.tobytes() for k, v in cols.items()}, eng.vectors().tobytes(),
            eng.get(cols["id"]).to_pylist() if len(eng) else None,
            tuple(getattr(eng, k) for k in ("ef", "ef_max", "scan_limit", "seed_ef", "seed_min", "group", "scan")))


_EXPECTED = contents(ce.Engine.open(_PRISTINE, read_only=True))


def check_invariants(eng: ce.Engine) -> None:
    """The rules every ingested row obeys (chrono_engine/schema.py) hold for an opened store."""
    cols = eng.columns()
    rel = cols["reliability"]
    if not np.all((rel >= 0) & (rel <= 1)):
        raise Finding(f"opened with reliability outside [0, 1]: {rel[~((rel >= 0) & (rel <= 1))][:3]}")
    if len(np.unique(cols["id"])) != len(cols["id"]):
        raise Finding("opened with duplicate ids")
    if np.any(cols["valid_to"] <= cols["valid_from"]):
        raise Finding("opened with valid_to <= valid_from")
    if np.any(cols["retracted_at"] <= cols["ingested_at"]):
        raise Finding("opened with retracted_at <= ingested_at")
    if len(eng) and (cols["fact_type"].max() >= len(eng.fact_types)
                     or cols["stem"].max() >= len(eng.stems) or cols["stem"].min() < -1):
        raise Finding("opened with a fact type or stem code that has no name")
    if not np.all(np.isfinite(eng.vectors())):
        raise Finding("opened with non-finite vectors")


def test_one_input(data: bytes) -> None:
    """One input: write the store with one file replaced, open it, read it."""
    head = data[0] if data else 0
    name, sealed, body = FILES[(head & 0x7F) % len(FILES)], bool(head & 0x80), data[1:]
    shutil.rmtree(_WORK, ignore_errors=True)
    for f, content in _CONTENT.items():
        (_WORK / f).parent.mkdir(parents=True, exist_ok=True)
        (_WORK / f).write_bytes(body if f == name else content)
    if sealed:
        reseal(_WORK)
    eng = attempt(ce.Engine.open, _WORK, threads=1)
    if isinstance(eng, Refused):
        outcome(f"{Path(name).name} {sealed} {type(eng.error).__name__} {str(eng.error).replace(str(_WORK), '')}")
        return
    outcome(f"{Path(name).name} {sealed} opened")
    got = contents(eng)  # any exception reading an opened store is a finding
    q = np.linspace(1.0, 2.0, eng.dim, dtype=np.float32)
    eng.search(q, k=5)
    eng.search(q, k=5, mode="all", exact=True)
    check_invariants(eng)
    # re-sealing recomputes the data files' checksums, not the log's digests: a changed log
    # opens as it was (its tail after the last acknowledged write dropped) or not at all
    if (not sealed or name.endswith("log.wal")) and body != _CONTENT[name] and got != _EXPECTED:
        raise Finding(f"{name} was changed, the checksums were not recomputed, and the store "
                      "opened with different contents")


if __name__ == "__main__":
    main(test_one_input, max_len=16384)
