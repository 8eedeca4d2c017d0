"""Coalescing of concurrent single searches (internal).

A server answers one request at a time per thread, but the planner is fastest when queries
come in groups: a group's queries share every row's load (docs/search.md). When several
threads (or asyncio tasks, through :meth:`Engine.asearch`) call :meth:`Engine.search` at
once, :class:`Coalescer` gathers them into groups served by one ``search_batch``:

* a call that finds the engine idle runs at once, alone: one client pays no wait;
* calls that arrive while a group runs queue up; when it ends, the next queued call leads
  the next group, taking up to ``max_group`` queued calls with the same options (k and every
  option but the per-query times, which travel as arrays), so under load each group holds
  what arrived during the previous one;
* with ``wait`` > 0, a leader that saw company in the previous group waits up to ``wait``
  seconds for its group to fill before it runs.

Each call's times (``as_of``, ``known_at``, a window; "now" included) are resolved when the
call is made, so a coalesced call asks exactly what it would have asked alone; its answer
is the same whenever the answer is certified (the ``certified`` column: the exact top-k of
the definition, whatever the group). A group that fails (the engine closed under it) fails
each of its calls with the same error.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Coalescer", "Request"]


class Request:
    """One queued call: its options key, its payload and, once served, its result."""

    __slots__ = ("key", "payload", "run", "done", "lead", "result", "error")

    def __init__(self, key: Hashable, payload: Any, run: Callable[[list], list]) -> None:
        self.key, self.payload, self.run = key, payload, run
        self.done = threading.Event()
        self.lead = False    # set when this call is to lead the next group
        self.result: Any = None
        self.error: BaseException | None = None


class Coalescer:
    """Runs ``run(batch)`` (a list of :class:`Request` with one key; returns one result per
    request, in order, or the exception that request raises) for groups of concurrent
    calls; see the module docstring. ``run`` is given per call (:meth:`submit`) or here; an
    engine passes its own per call, so that the coalescer holds no reference to it (a
    cycle would keep a dropped engine, and its store's writer lock, alive until the next
    garbage collection)."""

    def __init__(self, run: Callable[[list], list] | None = None, *, max_group: int = 64,
                 wait: float = 0.0) -> None:
        self._run = run
        self.max_group, self.wait = max_group, wait
        self._cond = threading.Condition()
        self._queue: list[Request] = []
        self._busy = False
        self._last_size = 1
        #: groups run and calls served (for tests and metrics)
        self.groups = self.calls = 0

    def submit(self, key: Hashable, payload: Any, run: Callable[[list], list] | None = None) -> Any:
        """Serve one call (blocking); returns its result or raises its error. ``run``: the
        group runner (default: the constructor's); calls with one key share one runner."""
        req = Request(key, payload, run or self._run)
        with self._cond:
            self._queue.append(req)
            lead = not self._busy
            self._busy = True
            self._cond.notify_all()  # a leader waiting for company may go
        if not lead:
            req.done.wait()
            if not req.lead:
                return _outcome(req)
        return self._lead(req)

    def _lead(self, req: Request) -> Any:
        with self._cond:
            if self.wait > 0 and self._last_size > 1:
                deadline = time.monotonic() + self.wait
                while self._count(req.key) < self.max_group:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            batch = [req] + [r for r in self._queue if r is not req and r.key == req.key][:self.max_group - 1]
            taken = {id(r) for r in batch}
            self._queue = [r for r in self._queue if id(r) not in taken]
            self._last_size = len(batch)
            self.groups += 1
            self.calls += len(batch)
        try:
            results = req.run(batch)
            for r, res in zip(batch, results):  # a result may be that call's own error
                if isinstance(res, BaseException):
                    r.error = res
                else:
                    r.result = res
        except BaseException as e:  # noqa: BLE001 - every call of the group gets it
            for r in batch:
                r.error = e
        with self._cond:
            for r in batch:
                if r is not req:
                    r.done.set()
            if self._queue:  # the next queued call leads the next group
                nxt = self._queue[0]
                nxt.lead = True
                nxt.done.set()
            else:
                self._busy = False
        return _outcome(req)

    def _count(self, key: Hashable) -> int:
        return sum(r.key == key for r in self._queue)


def _outcome(req: Request) -> Any:
    if req.error is not None:
        raise req.error
    return req.result
