"""What the service counts and logs: requests by endpoint and status, a latency histogram
(Prometheus' text format at ``/metrics``; summed across the workers of ``chrono serve
--workers``), and the JSON-lines request log, written in batches."""
from __future__ import annotations

import asyncio
import bisect
import datetime as _dt
import json
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from .._util import open_regular
from .encode import dumps

#: the request log's lines are written together, at most this many seconds after the first
LOG_EVERY = 0.05

#: seconds between a worker's publications of its counters (``chrono serve --workers``)
PUBLISH_EVERY = 1.0


#: the most bytes a worker's published counters are read to (a few kB in practice)
COUNTERS_MAX = 1 << 20



def read_regular(path: Path, limit: int) -> bytes:
    """A file's bytes if it is a regular file of at most ``limit`` bytes (opened without
    following a link or blocking on a FIFO, :func:`._util.open_regular`); OSError else."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path.name} is more than {limit} bytes")
    return data



class Metrics:
    """Counters and a latency histogram per endpoint, in Prometheus' text format."""

    _BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count: dict = {}
        self.hist: dict = {}

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.count[(endpoint, status)] = self.count.get((endpoint, status), 0) + 1
            h = self.hist.setdefault(endpoint, [0] * (len(self._BUCKETS) + 1) + [0.0])
            h[bisect.bisect_left(self._BUCKETS, seconds)] += 1  # its bucket; cumulated in text()
            h[-1] += seconds

    def snapshot(self) -> dict:
        """The counters as JSON-able data (what :meth:`publish` writes)."""
        with self._lock:
            return {"count": [[ep, st, n] for (ep, st), n in self.count.items()],
                    "hist": {ep: list(h) for ep, h in self.hist.items()}}

    def publish(self, folder: Path, worker: int) -> None:
        """This worker's counters into ``folder`` (``chrono serve --workers``: the
        supervisor's private folder), whole: written beside, then renamed over."""
        tmp = folder / f".worker-{worker}.json"
        tmp.write_bytes(orjson.dumps(self.snapshot()))
        os.replace(tmp, folder / f"worker-{worker}.json")

    def merged(self, folder: Path, worker: int) -> Metrics:
        """The service's counters: this worker's now, and every other worker's as it last
        published them (at most :data:`PUBLISH_EVERY` seconds old); a file that does not
        read as counters is skipped."""
        out = Metrics()
        snaps = [self.snapshot()]
        for f in folder.glob("worker-*.json"):
            if f.name != f"worker-{worker}.json":
                try:
                    snaps.append(orjson.loads(read_regular(f, COUNTERS_MAX)))
                except (OSError, orjson.JSONDecodeError):
                    continue
        width = len(self._BUCKETS) + 2
        for snap in snaps:
            try:  # the whole file read first: one that is not counters adds nothing
                counts = [(str(ep), int(st), int(n)) for ep, st, n in snap["count"]]
                hists = [(str(ep), [int(v) for v in h[:-1]] + [float(h[-1])]) for ep, h in snap["hist"].items()
                         if len(h) == width]
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            for ep, st, n in counts:
                out.count[(ep, st)] = out.count.get((ep, st), 0) + n
            for ep, h in hists:
                mine = out.hist.setdefault(ep, [0] * (width - 1) + [0.0])
                for i, v in enumerate(h):
                    mine[i] += v
        return out

    def text(self, items: int) -> str:
        out = ["# HELP chrono_requests_total Requests answered, by endpoint and status.",
               "# TYPE chrono_requests_total counter"]
        with self._lock:
            for (ep, st), n in sorted(self.count.items()):
                out.append(f'chrono_requests_total{{endpoint="{ep}",status="{st}"}} {n}')
            out += ["# HELP chrono_request_seconds Request latency.", "# TYPE chrono_request_seconds histogram"]
            for ep, h in sorted(self.hist.items()):
                cum = 0
                for i, b in enumerate(self._BUCKETS):
                    cum += h[i]
                    out.append(f'chrono_request_seconds_bucket{{endpoint="{ep}",le="{b}"}} {cum}')
                total = cum + h[len(self._BUCKETS)]
                out.append(f'chrono_request_seconds_bucket{{endpoint="{ep}",le="+Inf"}} {total}')
                out.append(f'chrono_request_seconds_count{{endpoint="{ep}"}} {total}')
                out.append(f'chrono_request_seconds_sum{{endpoint="{ep}"}} {h[-1]:.6f}')
        out += ["# HELP chrono_items Items in the store.", "# TYPE chrono_items gauge", f"chrono_items {items}"]
        return "\n".join(out) + "\n"


class RequestLog:
    """The request log: a JSON line per request (time, method, endpoint, status, ms, the
    worker's index), written together at most :data:`LOG_EVERY` seconds after the first
    line waiting (or once 256 wait) and at shutdown: one write per batch, not one per
    request. ``stream``: a writable text stream, or None for no log."""

    def __init__(self, stream: Any, worker: int | None) -> None:
        self.stream, self.worker = stream, worker
        self.pending: list[bytes] = []

    def flush(self) -> None:
        if self.pending and self.stream is not None:
            # at most ~4 KiB a write, in whole lines: a pipe takes such a write whole, so the
            # lines of the workers sharing one (--workers) never interleave mid-line
            pending, log = self.pending, self.stream
            first = size = 0
            for i, line in enumerate(pending):
                if size + len(line) > 4000 and i > first:
                    log.write(b"".join(pending[first:i]).decode())
                    log.flush()
                    first, size = i, 0
                size += len(line)
            log.write(b"".join(pending[first:]).decode())
            log.flush()
            pending.clear()

    def line(self, method: str, endpoint: str, status: int, seconds: float) -> None:
        """One request's line, queued (and the batch written when it is due)."""
        if self.stream is None:
            return
        line = {"ts": _dt.datetime.now(_dt.timezone.utc), "method": method, "endpoint": endpoint,
                "status": status, "ms": round(seconds * 1e3, 3)}
        if self.worker is not None:
            line["worker"] = self.worker
        self.pending.append(dumps(line) + b"\n")
        if len(self.pending) >= 256:
            self.flush()
        elif len(self.pending) == 1:
            try:
                asyncio.get_running_loop().call_later(LOG_EVERY, self.flush)
            except RuntimeError:  # no loop (not the case under uvicorn): at once
                self.flush()

    def event(self, **fields: Any) -> None:
        """A line that is not a request's (an error, a failed refresh), written at once."""
        if self.stream is not None:
            print(json.dumps(fields), file=self.stream, flush=True)


async def publish_forever(metrics: Metrics, folder: Path, worker: int) -> None:
    """A worker's counters published for the others' ``/metrics`` every
    :data:`PUBLISH_EVERY` seconds (a failed write is tried again at the next turn)."""
    while True:
        try:
            metrics.publish(folder, worker)
        except OSError:
            pass
        await asyncio.sleep(PUBLISH_EVERY)
