"""Loading temporal KG forecasting datasets (train / valid / test) into Arrow columns.

Two encodings (``docs/data.md`` describes them and the datasets known by name):

- **names**: ``subject<TAB>relation<TAB>object<TAB>YYYY-MM-DD``; ids come from
  ``entity2id.json`` / ``relation2id.json`` when present (every name must be listed), else
  from the sorted names seen in the three splits; ``t`` is the day index from the earliest
  date (or from the first key of ``ts2id.json``), ``time_unit`` "day";
- **ids**: ``subject_id<TAB>relation_id<TAB>object_id<TAB>time<TAB>flag`` (fields may be
  padded with spaces; the flag is ignored); names from ``entity2id.txt`` /
  ``relation2id.txt`` (``name<TAB>id``) when present; ``t`` is the file's integer time
  (hours in the ICEWS releases), ``time_unit`` "file".

Every split is a table with int32 columns ``subject``, ``relation``, ``object`` and int64
``t``, in file order. :meth:`TKG.with_inverse` adds the inverse facts ``(o, r + R, s, t)``
(TLogic's ``_relation``). Splits must be chronological (train before valid before test:
forecasting answers a query at t from facts before t); a split may not be empty.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import datasets
from ..errors import DataFileError, NotFoundError

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class TKG:
    """A loaded dataset: id maps and the three splits (Arrow tables)."""

    entities: tuple
    relations: tuple
    train: pa.Table
    valid: pa.Table
    test: pa.Table
    time_unit: str          # "day" (names format) or "file" (ids format: the file's integer time)
    day0: _dt.date | None   # the date of t = 0 (names format)
    source_format: str      # "names" or "ids"

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        """Base relations; inverse relation r + n_relations reads "_<name>"."""
        return len(self.relations)

    def split(self, name: str) -> pa.Table:
        if name not in SPLITS:
            raise NotFoundError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)

    def relation_name(self, r: int) -> str:
        n = self.n_relations
        return self.relations[r] if r < n else "_" + self.relations[r - n]

    def with_inverse(self, name: str) -> pa.Table:
        """The split plus its inverse facts (o, r + R, s, t), originals first."""
        t = self.split(name)
        s, r, o, tt = (t.column(c).to_numpy() for c in ("subject", "relation", "object", "t"))
        return _table(np.concatenate([s, o]), np.concatenate([r, r + self.n_relations]),
                      np.concatenate([o, s]), np.concatenate([tt, tt]))


def _table(s, r, o, t) -> pa.Table:
    return pa.table({"subject": pa.array(np.asarray(s, np.int32)), "relation": pa.array(np.asarray(r, np.int32)),
                     "object": pa.array(np.asarray(o, np.int32)), "t": pa.array(np.asarray(t, np.int64))})


def _lines(path: Path):
    if not path.is_file():
        raise DataFileError(f"{path}: no such file (a dataset needs train.txt, valid.txt, test.txt)",
                            path=str(path))
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if line.strip():
                yield no, line


def _detect(path: Path) -> str:
    for no, line in _lines(path):
        fields = [x.strip() for x in line.split("\t")]
        if len(fields) >= 4 and all(x.lstrip("-").isdigit() for x in fields[:4]):
            return "ids"
        if len(fields) == 4:
            return "names"
        raise DataFileError(f"{path}:{no}: expected 4 tab-separated fields (names format) or 5 "
                            f"(ids format), got {len(fields)}: {line[:80]!r}", path=str(path), line=no)
    raise DataFileError(f"{path}: the split is empty", path=str(path))


def _json_map(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise DataFileError(f"{path}: not valid JSON ({e})", path=str(path)) from None
    if not isinstance(m, dict) or not all(isinstance(v, int) for v in m.values()):
        raise DataFileError(f"{path}: expected an object of name -> integer id", path=str(path))
    return m


def _names_from_map(m: dict, path: Path) -> tuple:
    names = [None] * len(m)
    for name, i in m.items():
        if not 0 <= i < len(m) or names[i] is not None:
            raise DataFileError(f"{path}: ids must be 0..{len(m) - 1}, each once (bad id {i} for {name!r})",
                                path=str(path))
        names[i] = name
    return tuple(names)


def _load_names(root: Path) -> TKG:
    rows = {}
    for split in SPLITS:
        path = root / f"{split}.txt"
        recs = []
        for no, line in _lines(path):
            f = line.split("\t")
            if len(f) != 4:
                raise DataFileError(f"{path}:{no}: expected 4 tab-separated fields "
                                    f"(subject, relation, object, YYYY-MM-DD), got {len(f)}: {line[:80]!r}",
                                    path=str(path), line=no)
            try:
                day = _dt.date.fromisoformat(f[3].strip())
            except ValueError:
                raise DataFileError(f"{path}:{no}: {f[3]!r} is not a YYYY-MM-DD date", path=str(path),
                                    line=no) from None
            recs.append((f[0], f[1], f[2], day, no))
        if not recs:
            raise DataFileError(f"{path}: the split is empty", path=str(path))
        rows[split] = recs
    emap = _json_map(root / "entity2id.json")
    rmap = _json_map(root / "relation2id.json")
    if emap is None:
        emap = {n: i for i, n in enumerate(sorted({x for recs in rows.values() for r in recs for x in (r[0], r[2])}))}
    if rmap is None:
        rmap = {n: i for i, n in enumerate(sorted({r[1] for recs in rows.values() for r in recs}))}
    ts = _json_map(root / "ts2id.json")
    day0 = min(r[3] for recs in rows.values() for r in recs)
    if ts:
        try:
            day0 = min(day0, min(_dt.date.fromisoformat(k) for k in ts))
        except ValueError:
            raise DataFileError(f"{root / 'ts2id.json'}: keys must be YYYY-MM-DD dates", path=str(root / "ts2id.json")) from None
    tables = {}
    for split, recs in rows.items():
        path = root / f"{split}.txt"
        s = np.empty(len(recs), np.int32)
        r = np.empty(len(recs), np.int32)
        o = np.empty(len(recs), np.int32)
        t = np.empty(len(recs), np.int64)
        for i, (sn, rn, on, day, no) in enumerate(recs):
            for name, m, kind in ((sn, emap, "entity"), (on, emap, "entity"), (rn, rmap, "relation")):
                if name not in m:
                    raise DataFileError(f"{path}:{no}: unknown {kind} {name!r} (not in {kind}2id.json)",
                                        path=str(path), line=no)
            s[i], r[i], o[i], t[i] = emap[sn], rmap[rn], emap[on], (day - day0).days
        tables[split] = _table(s, r, o, t)
    return _finish(root, tables, _names_from_map(emap, root / "entity2id.json"),
                   _names_from_map(rmap, root / "relation2id.json"), "day", day0, "names")


def _txt_map(path: Path) -> tuple | None:
    if not path.is_file():
        return None
    m = {}
    for no, line in _lines(path):
        f = line.split("\t")
        if len(f) < 2 or not f[1].strip().lstrip("-").isdigit():
            raise DataFileError(f"{path}:{no}: expected name<TAB>id, got {line[:80]!r}", path=str(path), line=no)
        m[f[0].strip()] = int(f[1])
    return _names_from_map(m, path)


def _load_ids(root: Path) -> TKG:
    tables = {}
    hi_e = hi_r = -1
    for split in SPLITS:
        path = root / f"{split}.txt"
        vals = []
        for no, line in _lines(path):
            f = [x.strip() for x in line.split("\t")]
            if len(f) not in (4, 5):
                raise DataFileError(f"{path}:{no}: expected 4 or 5 tab-separated fields "
                                    f"(subject_id, relation_id, object_id, time[, flag]), got {len(f)}: "
                                    f"{line[:80]!r}", path=str(path), line=no)
            try:
                s, r, o, t = (int(x) for x in f[:4])
            except ValueError:
                raise DataFileError(f"{path}:{no}: ids and time must be integers: {line[:80]!r}",
                                    path=str(path), line=no) from None
            if min(s, r, o) < 0:
                raise DataFileError(f"{path}:{no}: negative id in {line[:80]!r}", path=str(path), line=no)
            vals.append((s, r, o, t))
        if not vals:
            raise DataFileError(f"{path}: the split is empty", path=str(path))
        a = np.asarray(vals, dtype=np.int64)
        hi_e = max(hi_e, int(a[:, [0, 2]].max()))
        hi_r = max(hi_r, int(a[:, 1].max()))
        tables[split] = _table(a[:, 0], a[:, 1], a[:, 2], a[:, 3])
    ents = _txt_map(root / "entity2id.txt")
    rels = _txt_map(root / "relation2id.txt")
    for names, hi, kind in ((ents, hi_e, "entity"), (rels, hi_r, "relation")):
        if names is not None and hi >= len(names):
            raise DataFileError(f"{root / (kind + '2id.txt')}: lists {len(names)} {kind} ids but the "
                                f"splits use id {hi}", path=str(root / f"{kind}2id.txt"))
    ents = ents or tuple(str(i) for i in range(hi_e + 1))
    rels = rels or tuple(str(i) for i in range(hi_r + 1))
    return _finish(root, tables, ents, rels, "file", None, "ids")


def _finish(root, tables, ents, rels, unit, day0, fmt) -> TKG:
    prev = None
    for split in SPLITS:
        t = tables[split].column("t").to_numpy()
        if prev is not None and t.min() < prev[1]:
            raise DataFileError(f"{root / (split + '.txt')}: starts at t={int(t.min())}, before the end of "
                                f"{prev[0]}.txt (t={prev[1]}): splits must be chronological",
                                path=str(root / f"{split}.txt"))
        prev = (split, int(t.max()))
    return TKG(entities=tuple(ents), relations=tuple(rels), train=tables["train"], valid=tables["valid"],
               test=tables["test"], time_unit=unit, day0=day0, source_format=fmt)


def load(path, *, data_dir=None) -> TKG:
    """Load ``path``/{train,valid,test}.txt in the names or the ids format (detected from
    train.txt). Raises DataFileError naming the file and line of the first problem.

    ``path`` is a folder, or the name of a dataset (``"icews14"``) found in the data
    directory by :func:`chrono_engine.datasets.locate` (``data_dir``, else
    ``$CHRONO_DATA_DIR``, else the per-user cache; :class:`~chrono_engine.errors.DatasetNotFoundError`
    says how to get it when it is not there).

    >>> from chrono_engine import tkg
    >>> d = tkg.load("icews14")  # doctest: +SKIP
    >>> d.n_entities, d.train.num_rows  # doctest: +SKIP
    (7128, 63685)
    """
    root = datasets.locate(path, data_dir)
    if not root.is_dir():
        raise DataFileError(f"{root}: not a directory (expected train.txt, valid.txt, test.txt in it)",
                            path=str(root))
    fmt = _detect(root / "train.txt")
    return _load_ids(root) if fmt == "ids" else _load_names(root)
