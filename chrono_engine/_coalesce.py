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
* a leader that saw company in the previous group lets the calls that group answered come
  back before it runs (they would otherwise form the group after it: under load, groups
  alternate half-full): it waits while calls keep arriving, for as many as the last two
  groups held, until :data:`SETTLE_QUIET` passes without a call, at most
  :data:`SETTLE_MAX`; with ``wait`` > 0, up to ``wait`` seconds instead.

:class:`AsyncCoalescer` is the same policy for asyncio tasks (:meth:`Engine.asearch`, the
service): the calls queue on their event loop, where their Python runs, and each group runs
on one worker thread; no thread waits per call, so no convoy of threads contends for the
GIL when a group's answers come back.

Each call's times (``as_of``, ``known_at``, a window; "now" included) are resolved when the
call is made, so a coalesced call asks exactly what it would have asked alone; its answer
is the same whenever the answer is certified (the ``certified`` column: the exact top-k of
the definition, whatever the group). A group that fails (the engine closed under it) fails
each of its calls with the same error.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["AsyncCoalescer", "Coalescer", "Request"]

#: a leader whose last group had company lets the calls it answered come back: it waits
#: while calls keep arriving, until this long passes without one (seconds) ...
SETTLE_QUIET = 0.0003
#: ... and at most this long in all
SETTLE_MAX = 0.002


class Request:
    """One queued call: its options key, its payload and, once served, its result (or, for
    an asyncio call, the future that receives it)."""

    __slots__ = ("key", "payload", "run", "done", "lead", "result", "error", "future")

    def __init__(self, key: Hashable, payload: Any, run: Callable[[list], list]) -> None:
        self.key, self.payload, self.run = key, payload, run
        self.done: threading.Event | None = None  # made for a call that waits (not a leader)
        self.lead = False    # set when this call is to lead the next group
        self.result: Any = None
        self.error: BaseException | None = None
        self.future: asyncio.Future | None = None  # an AsyncCoalescer call's


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
        self._last_size = self._prev_size = 1
        self._target = 0  # the calls a waiting leader waits for (0: none waits)
        #: groups run and calls served (for tests and metrics)
        self.groups = self.calls = 0

    def submit(self, key: Hashable, payload: Any, run: Callable[[list], list] | None = None) -> Any:
        """Serve one call (blocking); returns its result or raises its error. ``run``: the
        group runner (default: the constructor's); calls with one key share one runner."""
        req = Request(key, payload, run or self._run)
        with self._cond:
            self._queue.append(req)
            lead = not self._busy
            if not lead:  # before the lock is let go: a leader sets it under the lock
                req.done = threading.Event()
            self._busy = True
            if len(self._queue) >= self._target:
                self._cond.notify_all()  # a leader waiting for company may go
        if not lead:
            req.done.wait()
            if not req.lead:
                return _outcome(req)
        return self._lead(req)

    def alone(self) -> bool:
        """Claim the engine for one call that finds it idle and unloaded (no group running,
        none queued, the last group a lone call: :meth:`submit` would run it at once, alone,
        without waiting for company): True, and the caller runs its call itself, then calls
        :meth:`release` (a call arriving meanwhile queues and leads the next group, as it
        would behind a lone leader of :meth:`submit`). False: the caller submits."""
        with self._cond:
            if self._busy or self._queue or self._last_size > 1:
                return False
            self._busy = True
            self._prev_size, self._last_size = self._last_size, 1
            self.groups += 1
            self.calls += 1
            return True

    def release(self) -> None:
        """The end of a call that :meth:`alone` let run: the next queued call leads."""
        with self._cond:
            if self._queue:
                nxt = self._queue[0]
                nxt.lead = True
                nxt.done.set()
            else:
                self._busy = False

    def _lead(self, req: Request) -> Any:
        with self._cond:
            if self._last_size > 1:
                # under load the groups alternate: the calls a group answers come back while
                # the next one runs. Wait for as many calls as the last two groups held (the
                # callers there are) while they keep coming: until a quiet period passes
                # with no new call (SETTLE_QUIET), at most SETTLE_MAX — or, with ``wait`` > 0,
                # until ``wait`` has passed
                target = min(self.max_group, self._last_size + self._prev_size)
                deadline = time.monotonic() + (self.wait if self.wait > 0 else SETTLE_MAX)
                n = self._count(req.key)
                self._target = target  # arrivals wake the leader only once there are enough
                while n < target:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left if self.wait > 0 else min(left, SETTLE_QUIET))
                    m = self._count(req.key)
                    if m == n and self.wait <= 0:
                        break  # no call came in a quiet period: the group is what there is
                    n = m
                self._target = 0
            batch = [req] + [r for r in self._queue if r is not req and r.key == req.key][:self.max_group - 1]
            taken = {id(r) for r in batch}
            self._queue = [r for r in self._queue if id(r) not in taken]
            self._prev_size, self._last_size = self._last_size, len(batch)
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


class AsyncCoalescer:
    """The coalescing policy for asyncio tasks of one event loop (module docstring).

    A call that finds no group running starts one; calls that arrive while a group runs
    queue up on the loop, and when it ends the next group takes up to ``max_group`` queued
    calls with the oldest call's key. Groups run ``run(batch)`` (as :class:`Coalescer`'s)
    on one worker thread, so the loop never blocks on a search; except with ``inline=True``
    (the service), where a call that finds no group running lets the loop turn twice (calls
    already received join it) and, still alone, runs at once on the loop: a lone caller
    pays no hand-off to the thread and back. ``timeout`` (seconds, or None) drops the answer
    of a call whose group runs too long (asyncio.TimeoutError); the group runs on.

    ``settle`` is how many turns of the loop the next group waits once a group is answered:
    tasks of the same process ask again within a turn or two and join it (2, the default);
    the service's callers are across a network round trip and cannot, so it starts the next
    group at once (0: the worker thread searches while the loop encodes and parses)."""

    def __init__(self, *, inline: bool = False, max_group: int = 64, settle: int = 2,
                 name: str = "chrono-groups") -> None:
        from concurrent.futures import ThreadPoolExecutor
        self.inline, self.max_group = inline, max_group
        self.settle = max(0, int(settle))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._queue: list[Request] = []
        self._busy = False
        #: groups run and calls served (for tests and metrics)
        self.groups = self.calls = 0

    async def submit(self, key: Hashable, payload: Any, run: Callable[[list], list],
                     timeout: float | None = None) -> Any:
        loop = asyncio.get_running_loop()
        req = Request(key, payload, run)
        fut = req.future = loop.create_future()
        self._queue.append(req)
        if self.inline and not self._busy and len(self._queue) == 1:
            for _ in range(2):  # turns of the loop: calls already received join the queue
                await asyncio.sleep(0)
            if not self._busy and len(self._queue) == 1 and self._queue[0] is req:
                self._queue.clear()
                self.groups += 1
                self.calls += 1
                res = _run_batch([req])[0]
                if isinstance(res, BaseException):
                    raise res
                return res
        if not self._busy and self._queue:
            self._start(loop)
        if timeout is None:
            return await fut
        # a timer instead of asyncio.wait_for (no task and no waiter per call); the group
        # skips a future that is already done when its answers come
        timer = loop.call_later(timeout, _expire, fut)
        try:
            return await fut
        finally:
            timer.cancel()

    def _start(self, loop: Any) -> None:
        key = self._queue[0].key
        size = max(1, min(int(self.max_group), 1024))
        group, rest = [], []
        for req in self._queue:
            (group if len(group) < size and req.key == key else rest).append(req)
        self._queue = rest
        self._busy = True
        self.groups += 1
        self.calls += len(group)
        loop.run_in_executor(self._pool, _run_batch, list(group)).add_done_callback(
            lambda f: self._done(loop, group, f))

    def _done(self, loop: Any, group: list, f: Any) -> None:
        results = f.result()  # _run_batch returns each call's result or error
        for req, res in zip(group, results):
            fut = req.future
            if fut.done():  # timed out (or its task was cancelled)
                continue
            if isinstance(res, BaseException):
                fut.set_exception(res)
            else:
                fut.set_result(res)
        # the next group starts after ``settle`` turns of the loop: the tasks just answered
        # run first, and those that ask again join it (else groups alternate between the
        # calls that waited and the calls that come back, each half as large); busy until then
        if self.settle:
            loop.call_soon(self._settle, loop, self.settle - 1)
        else:
            self._settle(loop, 0)

    def _settle(self, loop: Any, turns: int) -> None:
        if turns > 0:
            loop.call_soon(self._settle, loop, turns - 1)
            return
        self._busy = False
        if self._queue:
            self._start(loop)

    def close(self) -> None:
        """Let a running group finish and stop the worker thread."""
        self._pool.shutdown(wait=True)


def _run_batch(batch: list) -> list:
    """``run(batch)`` of a group: one result or error per call (an error of the whole
    group is every call's). The batch list is emptied before returning: the executor's
    work item keeps its arguments until its thread gets round to dropping them, which may
    be after the caller has its results (and has dropped its engine)."""
    try:
        return list(batch[0].run(batch))
    except BaseException as e:  # noqa: BLE001 - every call of the group gets it
        return [e] * len(batch)
    finally:
        batch.clear()


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_exception(asyncio.TimeoutError())


def _outcome(req: Request) -> Any:
    if req.error is not None:
        raise req.error
    return req.result
