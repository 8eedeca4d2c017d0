"""Temporal QA retrieval on TimeQA (human-annotated train split): does the time language
help find the paragraph that answers a time-constrained question?

    CHRONO_DATA_DIR=/path/to/data python benches/bench_temporal_qa.py --json bench_out/temporal_qa.json
    python benches/bench_temporal_qa.py --limit-docs 40          # quick smoke run

Data: ``chrono_engine.datasets.locate("timeqa")`` (``--data-dir``, else ``$CHRONO_DATA_DIR``,
else the package cache; ``chrono data download timeqa`` fetches it). The corpus is every
paragraph of every document except its title (``paras[1:]``), each kept with its document
and paragraph index. A question counts when it has at least one non-empty answer span; its
gold is the set of paragraphs holding one. Questions whose only answers are empty (no
answer in the document) or lie in the title (not in the corpus) are left out and counted.
gold@k is the share of questions with a gold paragraph among the first k results.

**Tune / report split.** Documents are split by a stable hash of their ``index`` string
(``--split`` is the salt, ``--tune-share`` the tune part's expected share), so every
question and its paragraphs fall in one part. Every row is reported on both parts (and on
all documents together, for comparison with the issue's figures). Any setting of a system
(k, fusion, filters, thresholds, a new system) may only be chosen by looking at the
**tune** part; the **report** part is for the figures we quote.

Systems, all on the same vectors (the project's ``TextEncoder``, all-MiniLM-L6-v2 int8, or
the encoder passed to :func:`main`), each a function in :data:`SYSTEMS` (add one there):

- ``cosine``: plain cosine top-k over the paragraphs (NumPy), the full question;
- ``cosine_cleaned``: the same with the question's time words removed (the text
  ``engine.query`` embeds), which separates the cleaning from the time filter;
- ``engine_parse_time``: ``Engine(dim)`` holding every paragraph with ``vector`` = its
  embedding, ``content`` = its text and validity from ``ce.parse_time`` over the text:
  ``valid_from`` = the earliest start and ``valid_to`` = the latest end of the expressions
  that have both ends; a paragraph with none is *undated* and gets the widest validity the
  schema allows, ``valid_from`` = 0001-01-01 (``MIN_TIME_US``) with an open end. Then
  ``engine.query(question, k, now=NOW, embed=...)`` per question (its intent: window,
  as_of or latest; the full question embedded by the same encoder, as ``engine.query``
  does by default, looked up from the cache). Default search options (no decay; in ``latest`` mode items that ended before
  ``now`` are penalised and those starting after it excluded) and the query's default
  post-stage (each text once; undated items — valid from ``MIN_TIME_US``, open-ended —
  left out of questions with a time constraint, ``undated="auto"``: since then this row
  and the next agree on window questions);
- ``engine_parse_time_dated_only``: the same without the undated paragraphs;
- ``engine_parse_time_cleaned``: ``engine_parse_time`` with ``embed_text="cleaned"`` (the
  question's time words removed before embedding);
- ``engine_grounded``: the documented path for text whose time is inside it:
  ``ce.ground_rows`` over the paragraphs (no document date; one row per fact of
  ``ce.ground``, undated paragraphs once), ``engine.ingest``, ``engine.query(question)`` with
  its defaults (the window fit included: how well a fact's validity fits the question's
  window, half-life ``search.WINDOW_FIT_DAYS``, chosen on the tune part); hits mapped back
  to paragraphs (each comes once: ``distinct``);
- ``engine_grounded_nofit``: the same with ``window_fit=None`` (no window fit: the rows
  that overlap the window ranked by similarity alone);
- ``lexical_year_filter``: a control without the engine: keep the paragraphs that write a
  four-digit year (``\\b1[0-9]{3}\\b|\\b20[0-9]{2}\\b``) inside the question's window (its
  intent's window, or the year of its as_of anchor; a question with no time keeps every
  paragraph), rank them by cosine with the full question, and fill up to k with the other
  paragraphs by cosine.

Each system is also run *within the document*: only the question's own document's
paragraphs are ranked (the engine rows through one small engine per document, built the
same way).

Diagnostics (counts of questions, per part): the intent's mode (``mode_*``); the gold is
undated (``gold_undated``: it is absent from the dated-only corpus); no gold paragraph passes
the engine's filter for the intent under its parse_time validity (``gold_excluded_by_window``;
``gold_excluded_dated_only`` adds the undated gold); an engine hit that this file's own
reading of the filter (:func:`eligibility`) would not admit (``engine_hit_outside_filter``, a
check, expected 0); the year filter drops every gold paragraph
(``lexical_filter_drops_gold``) or keeps nothing in the document; an engine row returned
fewer than k results (``*/fewer_than_k``).

Embeddings are cached in an ``.npz`` per encoder under ``--cache`` (default
``<package cache>/bench_temporal_qa``), keyed by the sha1 of each text, so a rerun encodes
nothing; an interrupted encoding keeps what it saved. Texts are encoded sorted by length
(less padding). The speed line gives the encoder's rate (sentences/s, over what this run
encoded, or over ``--rate-sample`` paragraphs when everything was cached), ``parse_time``
and ``parse_temporal_intent`` per question (mean µs) and paragraphs/s of the per-paragraph
time extraction. Run time is bounded by the encoding (about 17k texts on the full split,
once); the rest takes about a minute.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

import chrono_engine as ce
from chrono_engine import datasets
from chrono_engine._time import scalar_us
from chrono_engine._util import cache_dir
from chrono_engine.schema import MIN_TIME_US, OPEN_END

NOW = "2024-01-01"
YEAR_RE = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")
PARTS = ("tune", "report", "all")
SCOPES = ("corpus", "doc")


def us(dt: datetime) -> int:
    """An aware datetime as int64 microseconds since the epoch (the engine's conversion)."""
    return scalar_us(dt, "time")


# ----------------------------------------------------------------------------- data

def load_timeqa(data_dir: str | os.PathLike | None = None, limit_docs: int | None = None) -> tuple[list[dict], Path]:
    """The TimeQA train documents (the first ``limit_docs`` of them) and the file read."""
    root = datasets.locate("timeqa", data_dir=data_dir)
    path = root / datasets.get("timeqa").files[0].path
    with open(path, encoding="utf-8") as f:
        docs = json.load(f)
    return (docs[:limit_docs] if limit_docs else docs), path


def part_of(doc_id: str, salt: str, tune_share: float = 0.5) -> str:
    """``"tune"`` or ``"report"``: a stable hash of the document id and the salt."""
    h = int.from_bytes(hashlib.sha256(f"{salt}\x00{doc_id}".encode()).digest()[:8], "big")
    return "tune" if h / 2.0 ** 64 < tune_share else "report"


@dataclass
class Question:
    text: str
    doc: int                   # document number in Corpus.doc_ids
    gold: frozenset            # corpus rows holding a non-empty answer


@dataclass
class Corpus:
    doc_ids: list[str]         # the documents' ``index``
    doc_part: list[str]        # "tune" / "report" per document
    doc_rows: list[np.ndarray]  # corpus rows of each document
    texts: list[str]           # paragraph texts (titles excluded)
    para_doc: np.ndarray       # document number per row
    para_idx: np.ndarray       # index in the document's ``paras`` per row (>= 1)
    titles: list[str]
    questions: list[Question]
    skipped: dict = field(default_factory=dict)


def build_corpus(docs: list[dict], salt: str = "timeqa-v1", tune_share: float = 0.5) -> Corpus:
    """Paragraphs ``paras[1:]`` of every document and the answerable questions."""
    texts, pdoc, pidx, rows_of, ids, parts, titles, qs = [], [], [], [], [], [], [], []
    skipped = {"no_answer": 0, "answer_only_in_title": 0, "span_mismatch": 0}
    for d, doc in enumerate(docs):
        ids.append(doc["index"])
        parts.append(part_of(doc["index"], salt, tune_share))
        titles.append(doc["paras"][0])
        first = len(texts)
        for i, p in enumerate(doc["paras"][1:], start=1):
            texts.append(p)
            pdoc.append(d)
            pidx.append(i)
        rows_of.append(np.arange(first, len(texts), dtype=np.int64))
        for qtext, answers in doc["questions"]:
            found = [a for a in answers if a["answer"].strip()]
            if not found:
                skipped["no_answer"] += 1
                continue
            skipped["span_mismatch"] += sum(doc["paras"][a["para"]][a["from"]:a["end"]] != a["answer"] for a in found)
            gold = frozenset(first + a["para"] - 1 for a in found if a["para"] >= 1)
            if not gold:
                skipped["answer_only_in_title"] += 1
                continue
            qs.append(Question(qtext, d, gold))
    return Corpus(ids, parts, rows_of, texts, np.asarray(pdoc, np.int64), np.asarray(pidx, np.int64),
                  titles, qs, skipped)


# ----------------------------------------------------------------------------- embeddings

def encoder_id(encoder: Any) -> str:
    """What the cache is keyed on besides the texts: ``encoder.cache_id`` if it has one,
    else the sha256 of its model file (and whether it normalises)."""
    cid = getattr(encoder, "cache_id", None)
    if cid:
        return str(cid)
    path = getattr(encoder, "model_path", None)
    if path:
        from chrono_engine._util import sha256_file
        return f"{Path(path).stem}-{sha256_file(path)[:16]}-n{int(getattr(encoder, 'normalize', 1))}"
    raise ValueError("the encoder needs a cache_id or a model_path (or pass cache=None)")


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


def _save_cache(path: Path, table: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = np.array(list(table), dtype="S20")
    vecs = np.stack(list(table.values())).astype(np.float32) if table else np.zeros((0, 0), np.float32)
    tmp = path.with_name(path.name + ".part.npz")
    np.savez(tmp, keys=keys, vecs=vecs)
    os.replace(tmp, path)


def embed_texts(encoder: Any, texts: list[str], cache: str | os.PathLike | None, *, chunk: int = 256,
                save_every: float = 60.0, log: Callable[[str], None] = print) -> tuple[np.ndarray, dict]:
    """Unit vectors of ``texts`` (n, d), from the cache where present; the others encoded,
    shortest first, and added to the cache. Returns the vectors and
    ``{"encoded": n, "seconds": s, "cached": m}``."""
    path = None if cache is None else Path(cache) / f"timeqa_{encoder_id(encoder)}.npz"
    table: dict[bytes, np.ndarray] = {}
    if path is not None and path.is_file():
        with np.load(path) as z:
            # NumPy's fixed-width bytes drop trailing NULs: pad the sha1 digests back to 20
            # bytes (else the ~1/256 of texts whose digest ends in a NUL never hit the cache)
            table = {bytes(k).ljust(20, b"\0"): v for k, v in zip(z["keys"], z["vecs"])}
    keys = [_key(t) for t in texts]
    todo: dict[bytes, str] = {}
    for k, t in zip(keys, texts):
        if k not in table and k not in todo:
            todo[k] = t
    order = sorted(todo, key=lambda k: len(todo[k]))
    stats = {"encoded": len(order), "cached": len(set(keys)) - len(order), "seconds": 0.0}
    if order:
        log(f"encoding {len(order):,} texts ({stats['cached']:,} cached) ...")
    t0 = last_save = last_log = time.perf_counter()
    for a in range(0, len(order), chunk):
        part = order[a:a + chunk]
        vecs = np.asarray(encoder.encode([todo[k] for k in part]), dtype=np.float32)
        for k, v in zip(part, vecs):
            table[k] = v
        now = time.perf_counter()
        done = a + len(part)
        if path is not None and (now - last_save > save_every or done == len(order)):
            _save_cache(path, table)
            last_save = now
        if len(order) > chunk and (now - last_log > 30 or done == len(order)):
            last_log = now
            rate = done / (now - t0)
            log(f"  {done:,}/{len(order):,} texts, {rate:.1f} sentences/s, "
                f"~{(len(order) - done) / rate:.0f} s left at that rate (texts come shortest first)")
    stats["seconds"] = time.perf_counter() - t0
    out = np.stack([table[k] for k in keys]).astype(np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
    return out, stats


# ----------------------------------------------------------------------------- time

@dataclass
class Times:
    valid_from: np.ndarray     # int64 µs per paragraph (MIN_TIME_US when undated)
    valid_to: np.ndarray       # int64 µs (OPEN_END when undated)
    dated: np.ndarray          # bool
    pair_row: np.ndarray       # (row, year) for every 4-digit year written in a paragraph
    pair_year: np.ndarray
    seconds: float             # parse_time over every paragraph


def paragraph_times(texts: list[str], now: str = NOW) -> Times:
    """Validity of each paragraph from ``ce.parse_time`` over its text, and its written years."""
    n = len(texts)
    vf = np.full(n, MIN_TIME_US, np.int64)
    vt = np.full(n, OPEN_END, np.int64)
    dated = np.zeros(n, bool)
    t0 = time.perf_counter()
    for i, text in enumerate(texts):
        ends = [(e.start, e.end) for e in ce.parse_time(text, now=now) if e.start is not None and e.end is not None]
        if ends:
            vf[i] = us(min(s for s, _ in ends))
            vt[i] = us(max(e for _, e in ends))
            dated[i] = True
    seconds = time.perf_counter() - t0
    rows, years = [], []
    for i, text in enumerate(texts):
        for y in sorted({int(m.group()) for m in YEAR_RE.finditer(text)}):
            rows.append(i)
            years.append(y)
    return Times(vf, vt, dated, np.asarray(rows, np.int64), np.asarray(years, np.int64), seconds)


def question_intents(questions: list[str], now: str = NOW) -> tuple[list, dict]:
    """``parse_temporal_intent`` of each question, and the mean µs per question of it and of
    ``parse_time`` (each timed over all questions)."""
    t0 = time.perf_counter()
    for q in questions:
        ce.parse_time(q, now=now)
    t1 = time.perf_counter()
    intents = [ce.parse_temporal_intent(q, now=now) for q in questions]
    t2 = time.perf_counter()
    n = max(len(questions), 1)
    return intents, {"parse_time_us_per_question": (t1 - t0) / n * 1e6,
                     "parse_temporal_intent_us_per_question": (t2 - t1) / n * 1e6}


def year_range(intent: Any) -> tuple[int, int] | None:
    """The years (inclusive) whose calendar year overlaps the question's window, or the
    as_of anchor's year; None for a question with no time (latest)."""
    if intent.mode == "as_of":
        return intent.anchor.year, intent.anchor.year
    if intent.mode != "window":
        return None
    ws, we = intent.window
    lo = ws.year if ws is not None else -10 ** 9
    if we is None:
        hi = 10 ** 9
    else:
        hi = we.year - 1 if (we.month, we.day, we.hour, we.minute, we.second, we.microsecond) == (1, 1, 0, 0, 0, 0) \
            else we.year
    return lo, hi


def eligibility(intent: Any, vf: np.ndarray, vt: np.ndarray, now_us: int) -> np.ndarray:
    """Which items the engine's filter for this intent admits (window: validity overlaps
    the window; as_of: valid at the anchor; latest: not starting after ``now``, the
    default ``future="exclude"``)."""
    if intent.mode == "window":
        ws, we = intent.window
        lo = us(ws) if ws is not None else MIN_TIME_US
        hi = us(we) if we is not None else OPEN_END
        return (vf < hi) & (vt > lo)
    if intent.mode == "as_of":
        t = us(intent.anchor)
        return (vf <= t) & (t < vt)
    return vf <= now_us


# ----------------------------------------------------------------------------- the bench state

@dataclass
class Bench:
    corpus: Corpus
    P: np.ndarray              # paragraph vectors
    Q: np.ndarray              # question vectors (full text)
    Qc: np.ndarray             # cleaned question vectors (engine.query with embed_text="cleaned")
    cleaned: list[str]
    intents: list
    times: Times
    now: str = NOW
    threads: int = 1
    k: int = 5                 # results asked of every system (the largest cut-off)
    engine_stats: dict = field(default_factory=dict)
    grounded: Grounded | None = None  # ce.ground_rows over the paragraphs, made on first use

    @property
    def now_us(self) -> int:
        return us(datetime.fromisoformat(self.now).replace(tzinfo=timezone.utc))

    def candidates(self, qi: int, scope: str) -> np.ndarray:
        if scope == "doc":
            return self.corpus.doc_rows[self.corpus.questions[qi].doc]
        return np.arange(len(self.corpus.texts), dtype=np.int64)


def _topk(scores: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best scores, ties to the lower row (``rows`` ascending)."""
    if len(rows) == 0 or k <= 0:
        return rows[:0]
    if len(rows) > 4 * k:  # only the scores that reach the k-th best (ties included) are sorted
        kth = -np.partition(-scores, k - 1)[k - 1]
        (cand,) = np.nonzero(scores >= kth)
    else:
        cand = np.arange(len(rows))
    order = cand[np.lexsort((cand, -scores[cand]))][:k]
    return rows[order]


def _scores(b: Bench, qv: np.ndarray, qi: int, rows: np.ndarray, scope: str) -> np.ndarray:
    """Cosine of question ``qi`` with the candidate rows (no copy of P for the corpus)."""
    return b.P @ qv[qi] if scope == "corpus" else b.P[rows] @ qv[qi]


def _cosine(b: Bench, scope: str, k: int, qv: np.ndarray) -> list[np.ndarray]:
    out = []
    for qi in range(len(b.corpus.questions)):
        rows = b.candidates(qi, scope)
        out.append(_topk(_scores(b, qv, qi, rows, scope), rows, k))
    return out


def sys_cosine(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _cosine(b, scope, k, b.Q)


def sys_cosine_cleaned(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _cosine(b, scope, k, b.Qc)


def year_kept(b: Bench, qi: int) -> np.ndarray | None:
    """Bool per corpus row: writes a year in the question's window (None: no filter)."""
    yr = year_range(b.intents[qi])
    if yr is None:
        return None
    keep = np.zeros(len(b.corpus.texts), bool)
    m = (b.times.pair_year >= yr[0]) & (b.times.pair_year <= yr[1])
    keep[b.times.pair_row[m]] = True
    return keep


def sys_lexical_year_filter(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    out = []
    for qi in range(len(b.corpus.questions)):
        rows = b.candidates(qi, scope)
        s = _scores(b, b.Q, qi, rows, scope)
        keep = year_kept(b, qi)
        if keep is None:
            out.append(_topk(s, rows, k))
            continue
        kr = keep[rows]
        first = _topk(s[kr], rows[kr], k)
        out.append(np.concatenate([first, _topk(s[~kr], rows[~kr], k - len(first))]))
    return out


def make_engine(b: Bench, ids: np.ndarray, rows: np.ndarray, valid_from: np.ndarray,
                valid_to: np.ndarray) -> ce.Engine:
    """An engine holding, under each id, the paragraph ``rows[i]`` with the validity
    ``[valid_from[i], valid_to[i])``."""
    c = b.corpus
    eng = ce.Engine(dim=b.P.shape[1], threads=b.threads)
    eng.ingest({"id": ids.astype(np.uint64), "vector": b.P[rows], "valid_from": valid_from, "valid_to": valid_to,
                "content": [c.texts[r] for r in rows],
                "title": [c.titles[c.para_doc[r]] for r in rows],
                "source": [c.doc_ids[c.para_doc[r]] for r in rows]})
    return eng


def _query_engines(b: Bench, scope: str, k: int, name: str, rows: np.ndarray, valid_from: np.ndarray,
                   valid_to: np.ndarray, extra: dict | None = None, **query_kw: Any) -> list[np.ndarray]:
    """Engine row i is paragraph ``rows[i]`` valid over ``[valid_from[i], valid_to[i])``
    (several rows may share a paragraph); one engine over the corpus or one per document;
    ``engine.query`` per question with ``query_kw``, its hits mapped back to paragraphs.
    What it embeds is looked up in the cached vectors of the same encoder (exactly what
    engine.query would embed: the full question, or its cleaned text)."""
    c = b.corpus
    lookup = {t: b.Qc[i] for i, t in enumerate(b.cleaned)}
    lookup.update({q.text: b.Q[i] for i, q in enumerate(c.questions)})
    ids = np.arange(len(rows), dtype=np.int64)

    def build(sel: np.ndarray) -> ce.Engine | None:
        return make_engine(b, sel, rows[sel], valid_from[sel], valid_to[sel]) if len(sel) else None

    t0 = time.perf_counter()
    if scope == "corpus":
        engines = {None: build(ids)}
    else:
        doc = c.para_doc[rows]
        engines = {d: build(ids[doc == d]) for d in sorted({q.doc for q in c.questions})}
    t_build = time.perf_counter() - t0
    out, uncertified, mismatched, repeated = [], 0, 0, 0
    t0 = time.perf_counter()
    for qi, q in enumerate(c.questions):
        eng = engines[None if scope == "corpus" else q.doc]
        if eng is None:
            out.append(np.zeros(0, np.int64))
            continue
        res = eng.query(q.text, k=k, now=b.now, embed=lookup.__getitem__, **query_kw)
        if res.intent.cleaned_query != b.intents[qi].cleaned_query or res.intent.mode != b.intents[qi].mode:
            mismatched += 1
        uncertified += int(not all(res.hits.column("certified").to_pylist()))
        paras = rows[res.hits.column("id").to_numpy().astype(np.int64)]
        repeated += len(set(paras.tolist())) != len(paras)
        out.append(paras)
    b.engine_stats[f"{name}/{scope}"] = {"build_s": t_build, "query_s": time.perf_counter() - t0,
                                         "engines": sum(e is not None for e in engines.values()),
                                         "rows": int(len(rows)), "intent_mismatch": mismatched,
                                         "uncertified_answers": uncertified, "repeated_paragraphs": repeated,
                                         **(extra or {})}
    return out


def _engine(b: Bench, scope: str, k: int, dated_only: bool, name: str,
            embed_text: str = "full") -> list[np.ndarray]:
    """One engine row per paragraph, validity from ``parse_time`` (:func:`paragraph_times`);
    ``embed_text``: the full question, the default, or its cleaned text."""
    rows = np.flatnonzero(b.times.dated) if dated_only else np.arange(len(b.corpus.texts), dtype=np.int64)
    return _query_engines(b, scope, k, name, rows, b.times.valid_from[rows], b.times.valid_to[rows],
                          embed_text=embed_text)


def sys_engine_parse_time(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _engine(b, scope, k, False, "engine_parse_time")


def sys_engine_parse_time_dated_only(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _engine(b, scope, k, True, "engine_parse_time_dated_only")


def sys_engine_parse_time_cleaned(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _engine(b, scope, k, False, "engine_parse_time_cleaned", embed_text="cleaned")


@dataclass
class Grounded:
    """``ce.ground_rows`` over every paragraph (no document date: TimeQA's paragraphs have
    none): one row per fact, ``row`` the paragraph of each (undated ones once)."""
    row: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    undated: int
    seconds: float


def grounded(b: Bench) -> Grounded:
    if b.grounded is None:
        n = len(b.corpus.texts)
        t0 = time.perf_counter()
        g = ce.ground_rows({"content": b.corpus.texts, "row": np.arange(n, dtype=np.int64)})
        seconds = time.perf_counter() - t0
        undated = (g["valid_from"] == MIN_TIME_US) & (g["valid_to"] == OPEN_END)
        b.grounded = Grounded(np.asarray(g["row"], np.int64), g["valid_from"], g["valid_to"], int(undated.sum()),
                              seconds)
    return b.grounded


def _engine_grounded(b: Bench, scope: str, k: int, name: str, **query_kw: Any) -> list[np.ndarray]:
    """The documented path for text whose time is inside it: ``ce.ground_rows`` (one row
    per fact, undated paragraphs once), ``engine.ingest``, ``engine.query(question)`` with
    its defaults (each paragraph's text once; undated paragraphs left out of questions with
    a time constraint; the window fit) but for ``query_kw``. Hits are mapped back to
    paragraphs by their row."""
    g = grounded(b)
    return _query_engines(b, scope, k, name, g.row, g.valid_from, g.valid_to,
                          extra={"undated_rows": g.undated, "ground_s": g.seconds,
                                 "window_fit_days": query_kw.get("window_fit", ce.search.WINDOW_FIT_DAYS)},
                          **query_kw)


def sys_engine_grounded(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _engine_grounded(b, scope, k, "engine_grounded")


def sys_engine_grounded_nofit(b: Bench, scope: str, k: int) -> list[np.ndarray]:
    return _engine_grounded(b, scope, k, "engine_grounded_nofit", window_fit=None)


#: name -> function(bench, scope "corpus" | "doc", k) -> ranked corpus rows per question
SYSTEMS: dict[str, Callable[[Bench, str, int], list[np.ndarray]]] = {
    "cosine": sys_cosine,
    "cosine_cleaned": sys_cosine_cleaned,
    "engine_parse_time": sys_engine_parse_time,
    "engine_parse_time_dated_only": sys_engine_parse_time_dated_only,
    "engine_parse_time_cleaned": sys_engine_parse_time_cleaned,
    "engine_grounded": sys_engine_grounded,
    "engine_grounded_nofit": sys_engine_grounded_nofit,
    "lexical_year_filter": sys_lexical_year_filter,
}


# ----------------------------------------------------------------------------- measures

def hits_at(ranked: list[np.ndarray], questions: list[Question], k: int) -> np.ndarray:
    """Per question: whether a gold paragraph is among the first k results."""
    return np.array([bool(q.gold.intersection(r[:k].tolist())) for r, q in zip(ranked, questions)], bool)


def part_masks(c: Corpus) -> dict[str, np.ndarray]:
    qpart = np.array([c.doc_part[q.doc] for q in c.questions])
    return {"tune": qpart == "tune", "report": qpart == "report", "all": np.ones(len(qpart), bool)}


def diagnostics(b: Bench, ranked: dict) -> dict[str, np.ndarray]:
    """Per-question flags, summed per part by :func:`evaluate`."""
    c, t = b.corpus, b.times
    nq = len(c.questions)
    flags = {f"mode_{m}": np.array([i.mode == m for i in b.intents], bool) for m in ("window", "as_of", "latest")}
    gold_dated = np.array([any(t.dated[r] for r in q.gold) for q in c.questions], bool)
    elig_any, elig_dated, ineligible_hits = np.zeros(nq, bool), np.zeros(nq, bool), np.zeros(nq, bool)
    lex_gold, lex_short = np.zeros(nq, bool), np.zeros(nq, bool)
    now_us = b.now_us
    for qi, q in enumerate(c.questions):
        gold = np.array(sorted(q.gold))
        ok = eligibility(b.intents[qi], t.valid_from[gold], t.valid_to[gold], now_us)
        elig_any[qi] = ok.any()
        elig_dated[qi] = (ok & t.dated[gold]).any()
        for name in ("engine_parse_time", "engine_parse_time_dated_only"):
            for scope in SCOPES:
                r = ranked.get((name, scope))
                if r is not None and len(r[qi]):
                    hit_ok = eligibility(b.intents[qi], t.valid_from[r[qi]], t.valid_to[r[qi]], now_us)
                    ineligible_hits[qi] |= not hit_ok.all()
        keep = year_kept(b, qi)
        if keep is not None:
            lex_gold[qi] = not keep[gold].any()
            lex_short[qi] = keep[c.doc_rows[q.doc]].sum() < 1
    flags.update({
        "gold_undated": ~gold_dated,
        "gold_excluded_by_window": ~elig_any,
        "gold_excluded_dated_only": ~elig_dated,
        "engine_hit_outside_filter": ineligible_hits,
        "lexical_filter_drops_gold": lex_gold,
        "lexical_no_kept_paragraph_in_doc": lex_short,
    })
    for (name, scope), r in ranked.items():
        if name.startswith("engine"):
            flags[f"{name}/{scope}/fewer_than_k"] = np.array([len(x) < b.k for x in r], bool)
    return flags


def evaluate(b: Bench, systems: list[str], ks: tuple[int, ...]) -> dict:
    """gold@k per part, system and scope, with counts and diagnostics."""
    k = max(ks)
    b.k = k
    c = b.corpus
    ranked = {(name, scope): SYSTEMS[name](b, scope, k) for name in systems for scope in SCOPES}
    masks = part_masks(c)
    flags = diagnostics(b, ranked)
    hit = {(name, scope, kk): hits_at(r, c.questions, kk) for (name, scope), r in ranked.items() for kk in ks}
    out = {}
    for part, m in masks.items():
        docs = [d for d, p in enumerate(c.doc_part) if part == "all" or p == part]
        rows = np.concatenate([c.doc_rows[d] for d in docs]) if docs else np.zeros(0, np.int64)
        res = {"documents": len(docs), "paragraphs": int(len(rows)),
               "dated_paragraphs": int(b.times.dated[rows].sum()), "questions": int(m.sum()),
               "systems": {}, "diagnostics": {name: int(f[m].sum()) for name, f in flags.items()}}
        for name in systems:
            res["systems"][name] = {scope: {f"gold@{kk}": float(hit[name, scope, kk][m].mean()) if m.any() else None
                                            for kk in ks} for scope in SCOPES}
        out[part] = res
    return out


# ----------------------------------------------------------------------------- run

def prepare(docs: list[dict], encoder: Any, *, cache: str | os.PathLike | None, salt: str = "timeqa-v1",
            tune_share: float = 0.5, now: str = NOW, threads: int = 1, rate_sample: int = 0,
            log: Callable[[str], None] = print) -> tuple[Bench, dict]:
    """Corpus, times, intents and vectors; returns the bench state and the speed figures."""
    c = build_corpus(docs, salt, tune_share)
    qtexts = [q.text for q in c.questions]
    times = paragraph_times(c.texts, now)
    intents, qspeed = question_intents(qtexts, now)
    cleaned = [i.cleaned_query or q for i, q in zip(intents, qtexts)]
    allv, est = embed_texts(encoder, c.texts + qtexts + cleaned, cache, log=log)
    n, m = len(c.texts), len(qtexts)
    P, Q, Qc = allv[:n], allv[n:n + m], allv[n + m:]
    enc = {"encoded": est["encoded"], "cached": est["cached"], "seconds": est["seconds"],
           "sentences_per_s": est["encoded"] / est["seconds"] if est["encoded"] else None,
           "rate_from": "this run's encoding" if est["encoded"] else None}
    if not est["encoded"] and rate_sample > 0 and n:
        sample = sorted(np.random.default_rng(0).choice(n, min(rate_sample, n), replace=False).tolist(),
                        key=lambda i: len(c.texts[i]))
        t0 = time.perf_counter()
        encoder.encode([c.texts[i] for i in sample])
        dt = time.perf_counter() - t0
        enc.update(sentences_per_s=len(sample) / dt, rate_from=f"a sample of {len(sample)} paragraphs")
    speed = {"encoder": enc, **qspeed, "paragraph_parse_time_per_s": n / times.seconds if times.seconds else None,
             "paragraph_parse_time_s": times.seconds}
    return Bench(c, P, Q, Qc, cleaned, intents, times, now=now, threads=threads), speed


def git_state() -> dict:
    """The checkout of the chrono_engine measured: its commit and its changed files (the
    time language moves fast, and parse_time decides the paragraphs' validity); empty when
    the package is not in a git checkout."""
    import subprocess
    root = Path(ce.__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return {}
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "chrono_engine"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": head, "changed": [line[3:] for line in dirty if line.strip()]}


def _fmt(x: float | None) -> str:
    return "   -  " if x is None else f"{x:6.3f}"


def print_report(result: dict, systems: list[str], ks: tuple[int, ...], log: Callable[[str], None] = print) -> None:
    ds, sp = result["dataset"], result["speed"]
    log(f"TimeQA train ({ds['path']}): {ds['documents']} documents, {ds['paragraphs']:,} paragraphs "
        f"({ds['dated_paragraphs']:,} dated by parse_time), {ds['questions']:,} questions "
        f"(left out: {ds['skipped']['no_answer']} without an answer, {ds['skipped']['answer_only_in_title']} "
        f"answered only in the title); split salt {result['settings']['split']!r}")
    e = sp["encoder"]
    rate = "n/a" if e["sentences_per_s"] is None else f"{e['sentences_per_s']:.1f} sentences/s ({e['rate_from']})"
    log(f"speed: encoder {rate}, {e['encoded']:,} encoded / {e['cached']:,} cached; parse_time "
        f"{sp['parse_time_us_per_question']:.0f} us/question, parse_temporal_intent "
        f"{sp['parse_temporal_intent_us_per_question']:.0f} us/question; paragraph time extraction "
        f"(parse_time) {sp['paragraph_parse_time_per_s']:,.0f} paragraphs/s")
    g = result["engine"].get("engine_grounded/corpus") or result["engine"].get("engine_grounded_nofit/corpus")
    if g:
        log(f"grounding (ce.ground_rows, one core): {ds['paragraphs'] / g['ground_s']:,.0f} paragraphs/s, "
            f"{g['rows']:,} rows ({g['undated_rows']:,} of them undated paragraphs)")
    head = "  ".join(f"g@{k:<4}" for k in ks)
    for part in PARTS:
        r = result["parts"][part]
        log("")
        log(f"[{part}] {r['documents']} documents, {r['paragraphs']:,} paragraphs ({r['dated_paragraphs']:,} dated), "
            f"{r['questions']} questions")
        log(f"  {'system':<30} corpus: {head}   within doc: {head}")
        for name in systems:
            s = r["systems"][name]
            log(f"  {name:<30}         " + "  ".join(_fmt(s["corpus"][f"gold@{k}"]) for k in ks)
                + "               " + "  ".join(_fmt(s["doc"][f"gold@{k}"]) for k in ks))
        log("  diagnostics (questions): " + ", ".join(f"{k} {v}" for k, v in r["diagnostics"].items()))


def main(argv: list[str] | None = None, encoder: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", help="folder holding timeqa/ (default: CHRONO_DATA_DIR, then the package cache)")
    ap.add_argument("--limit-docs", type=int, help="only the first N documents (smoke runs)")
    ap.add_argument("--split", default="timeqa-v1", help="salt of the document hash that makes the tune/report split")
    ap.add_argument("--tune-share", type=float, default=0.5, help="expected share of documents in the tune part")
    ap.add_argument("--ks", default="1,5", help="gold@k cut-offs")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    ap.add_argument("--now", default=NOW, help="the 'now' of parse_time / engine.query (fixed: reproducible)")
    ap.add_argument("--cache", help="embedding cache folder (default: <package cache>/bench_temporal_qa)")
    ap.add_argument("--no-cache", action="store_true", help="encode everything, write no cache")
    ap.add_argument("--threads", type=int, default=2, help="encoder and engine threads")
    ap.add_argument("--batch", type=int, default=32, help="encoder batch size")
    ap.add_argument("--rate-sample", type=int, default=128,
                    help="paragraphs timed for the encoder's rate when everything was cached (0: skip)")
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args(argv)
    ks = tuple(sorted({int(x) for x in a.ks.split(",")}))
    systems = [s for s in a.systems.split(",") if s]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    t_start = time.perf_counter()
    docs, path = load_timeqa(a.data_dir, a.limit_docs)
    if encoder is None:
        from chrono_engine.embed import TextEncoder
        encoder = TextEncoder(threads=a.threads, batch_size=a.batch)
    cache = None if a.no_cache else (a.cache or cache_dir() / "bench_temporal_qa")
    b, speed = prepare(docs, encoder, cache=cache, salt=a.split, tune_share=a.tune_share, now=a.now,
                       threads=a.threads, rate_sample=a.rate_sample)
    t0 = time.perf_counter()
    parts = evaluate(b, systems, ks)
    speed["evaluate_s"] = time.perf_counter() - t0
    speed["total_s"] = time.perf_counter() - t_start
    c = b.corpus
    result = {
        "dataset": {"path": str(path), "documents": len(c.doc_ids), "paragraphs": len(c.texts),
                    "dated_paragraphs": int(b.times.dated.sum()), "questions": len(c.questions),
                    "skipped": c.skipped, "limit_docs": a.limit_docs},
        "settings": {"now": a.now, "ks": list(ks), "split": a.split, "tune_share": a.tune_share,
                     "systems": systems, "encoder": repr(encoder), "threads": a.threads,
                     "chrono_engine": str(Path(ce.__file__).parent)},
        "git": git_state(),
        "machine": {"processor": platform.processor() or platform.machine(), "python": sys.version.split()[0]},
        "speed": speed, "engine": b.engine_stats, "parts": parts,
    }
    print_report(result, systems, ks)
    print(f"\nevaluation {speed['evaluate_s']:.1f} s, total {speed['total_s']:.1f} s")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
