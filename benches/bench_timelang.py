"""parse_time vs dateparser (and JioNLP when installed) on short retrieval queries.

Prints the per-call cost (process CPU time) of each parser in microseconds and the ratio, checks that every
query with a time expression got one from parse_time, and writes the figures as JSON:

    python benches/bench_timelang.py --json bench_timelang.json

dateparser (``pip install dateparser``) and JioNLP (``pip install jionlp``) are optional:
a peer that is not installed is reported as missing. dateparser is given the languages
(en, zh) up front — without that hint it auto-detects among ~200 locales and costs tens
of milliseconds per call, which would flatter us unfairly.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime

from chrono_engine.timelang import parse_temporal_intent, parse_time

NOW = datetime(2025, 6, 18, 12, 0, 0)
TZ = "Asia/Shanghai"

#: (query, has a time expression)
QUERIES = [
    ("现在总监出差住宿标准是多少？", True),
    ("2024 年 8 月签订该采购合同时审批权限表是什么", True),
    ("2024 年 3 月发布的供应商考核办法", True),
    ("2025 年上半年的安全通报", True),
    ("上个月的报销政策", True),
    ("过去 90 天内的运维故障单", True),
    ("总监出差住宿上限是多少", False),
    ("最近出台的安全生产规范有哪些", False),
    ("去年第四季度的产线良率总结", True),
    ("当前正在执行的考勤细则", False),
    ("截至2024年8月的审批权限表", True),
    ("近三个月的报销记录", True),
    ("2024年3月至5月的采购合同", True),
    ("自2026年3月1日起施行的差旅制度", True),
    ("2023年以来的制度修订", True),
    ("明天下午3点的会议", True),
    ("上周三的巡检报告", True),
    ("2024年底前完成的审计", True),
    ("what was the policy as of March 2024", True),
    ("what is the current hotel cap for directors", False),
    ("incidents in the past 90 days", True),
    ("reports from last week", True),
    ("approval table in force in August 2024", True),
    ("policies changed between 2020 and 2022", True),
    ("expense rules since 2023", True),
    ("latest travel policy", False),
    ("meeting notes from yesterday afternoon", True),
    ("Q3 2024 revenue summary", True),
    ("contracts signed 3 days ago", True),
    ("the SOP before January 2025", True),
    ("audit findings from early 2024", True),
    ("release notes 2024-03-07", True),
]


#: Bare expressions: the inputs ``dateparser.parse`` (a whole-string parser) is made for.
BARE = ["2024-03-07", "March 7 2024", "7 Mar 2024", "yesterday", "last week", "3 days ago",
        "in 2 weeks", "next month", "2024年3月7日", "昨天", "3天前", "上个月", "March 2024",
        "tomorrow", "2 years ago", "20240307"]


# CPU time of this process: steadier than wall time on a shared machine, and every parser
# here is single-threaded pure computation, so the two agree on an idle one.
_clock = time.process_time


def _calibrate(fn, queries, min_seconds: float) -> int:
    """Repetitions of the query list that take at least ``min_seconds``."""
    for q in queries:  # warm caches and lazy imports
        fn(q)
    n = 1
    while True:
        t = _clock()
        for _ in range(n):
            for q in queries:
                fn(q)
        if _clock() - t >= min_seconds or n >= 1 << 16:
            return n
        n *= 2


def _measure(contenders: dict, queries, rounds: int, min_seconds: float) -> dict:
    """Best-of-``rounds`` microseconds (CPU) per call for each contender. The contenders
    take turns within every round, so a busy machine slows them alike."""
    reps = {name: _calibrate(fn, queries, min_seconds) for name, fn in contenders.items()}
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            n = reps[name]
            t = _clock()
            for _ in range(n):
                for q in queries:
                    fn(q)
            best[name] = min(best[name], (_clock() - t) / (n * len(queries)) * 1e6)
    return best


def _peers():
    peers = {}
    try:
        import dateparser
        from dateparser.search import search_dates

        settings = {"RELATIVE_BASE": NOW, "TIMEZONE": TZ, "RETURN_AS_TIMEZONE_AWARE": False}
        peers["dateparser.search_dates"] = (
            dateparser.__version__,
            lambda q: search_dates(q, languages=["en", "zh"], settings=settings), None)
        peers["dateparser.parse"] = (
            dateparser.__version__,
            lambda q: dateparser.parse(q, languages=["en", "zh"], settings=settings), None)
    except ImportError:
        peers["dateparser.search_dates"] = None
    try:
        import jionlp

        base = NOW.timestamp()
        peers["jionlp.extract_time (zh only)"] = (
            jionlp.__version__, lambda q: jionlp.ner.extract_time(q, time_base=base), "zh")
    except ImportError:
        peers["jionlp.extract_time (zh only)"] = None
    except Exception as exc:  # JioNLP prints banners and may fail to load its data
        print(f"jionlp unavailable: {exc!r}", file=sys.stderr)
    return peers


def _is_zh(q: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in q)


def _table(title: str, queries, contenders: dict, versions: dict, args, report: dict) -> None:
    times = _measure(contenders, queries, args.rounds, args.min_seconds)
    base = times["parse_time"]
    print(f"\n{title}: {len(queries)} texts, mean {statistics.mean(map(len, queries)):.1f} chars")
    print(f"{'parser':38} {'us/call':>9} {'vs parse_time':>14} {'found':>6}")
    rows = {}
    for name, us in times.items():
        if name == "parse_temporal_intent":  # an intent is always returned: count timed ones
            found = sum(contenders[name](q).mode != "latest" for q in queries)
        else:
            found = sum(bool(contenders[name](q)) for q in queries)
        label = f"{name} {versions.get(name, '')}".strip()
        print(f"{label:38} {us:9.1f} {us / base:13.1f}x {found:6d}")
        rows[name] = {"version": versions.get(name), "us_per_call": round(us, 2),
                      "ratio_to_parse_time": round(us / base, 2), "found": found}
    report[title] = {"texts": len(queries), "results": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the figures to this path")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--min-seconds", type=float, default=0.1,
                    help="minimum CPU time of one contender's turn in a round")
    args = ap.parse_args(argv)

    queries = [q for q, _ in QUERIES]
    # correctness first: every query with a time must get one, and none without
    missed = [q for q, has in QUERIES if bool(parse_time(q, now=NOW, tz=TZ)) != has]
    if missed:
        print("parse_time result check FAILED for:", missed, file=sys.stderr)
        return 1

    ours = {"parse_time": lambda q: parse_time(q, now=NOW, tz=TZ)}
    peers = _peers()
    versions = {name: p[0] for name, p in peers.items() if p}
    missing = [name for name, p in peers.items() if p is None]
    for name in missing:
        print(f"{name}: not installed")
    report = {"python": platform.python_version(), "machine": platform.machine(),
              "clock": "process CPU time", "missing": missing}
    dp = {k: v[1] for k, v in peers.items() if v and k.startswith("dateparser")}
    _table("short queries", queries,
           {**ours, "parse_temporal_intent": lambda q: parse_temporal_intent(q, now=NOW, tz=TZ),
            **dp}, versions, args, report)
    jio = {k: v[1] for k, v in peers.items() if v and k.startswith("jionlp")}
    if jio:
        _table("Chinese queries", [q for q in queries if _is_zh(q)], {**ours, **jio}, versions,
               args, report)
    _table("bare expressions", BARE, {**ours, **dp}, versions, args, report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2, ensure_ascii=False)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
