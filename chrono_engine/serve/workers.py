"""``serve``: one process serving one engine under uvicorn, or, for a read replica,
``--workers N`` processes on one port (``SO_REUSEPORT``; Linux). One process's event loop
serves ~5 k requests/s whatever the core count; replicas are how reads scale past that on
one machine (docs/serve.md)."""
from __future__ import annotations

import dataclasses
import gc
import os
import sys
import threading
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ServiceError
from .auth import Keys, need_keys
from .context import Limits
from .routes import make_app


def serve(path: str, *, host: str = "127.0.0.1", port: int = 8000, name: str | None = None,
          keys_file: str | None = None, allow_anonymous: bool = False, limits: Limits | None = None,
          threads: int | None = None, snapshots: str | None = None, read_only: bool = False,
          refresh: float | None = None, workers: int = 1) -> None:
    """Open the store at ``path`` for writing and serve it until SIGINT/SIGTERM (uvicorn,
    one process, one engine; graceful: in-flight requests finish, then a checkpoint).
    ``read_only``: a read replica (no writer lock; writes answer 403), opening the store
    again every ``refresh`` seconds when it has changed. ``workers`` > 1 (read replicas
    only; Linux): that many worker processes, each its own engine and event loop, sharing
    the port, with ``threads`` engine threads each (default: the cores shared
    out among them); see :func:`_serve_workers`."""
    import uvicorn

    from ..engine import Engine
    from .._args import count
    if allow_anonymous and host not in ("127.0.0.1", "::1", "localhost"):
        raise ConfigError("--no-auth serves only a loopback address (127.0.0.1, ::1)")
    if refresh is not None and not read_only:
        raise ConfigError("--refresh is for a read replica (--read-only)")
    workers = count(workers, "workers", lo=1, hi=256, error=ConfigError)
    if workers > 1 and not read_only:
        raise ConfigError("--workers N serves a read replica (--read-only): the store has one writer, so a "
                          "service that writes is one process; run the writer beside the replicas (docs/serve.md)")
    keys = Keys.from_env(keys_file)
    need_keys(keys, allow_anonymous)  # before the store opens or any worker starts
    app_kw = dict(name=name or Path(path).name, keys=keys, allow_anonymous=allow_anonymous, limits=limits,
                  snapshots=snapshots, read_only=read_only, refresh=(path, refresh) if refresh is not None else None)
    if workers > 1:
        if threads is None:
            threads = max(1, (os.cpu_count() or 1) // workers)
        print(startup_line(path, host, port, keys, keys_file, allow_anonymous, limits, read_only, workers),
              file=sys.stderr, flush=True)
        _serve_workers(workers, host, port, dict(path=path, threads=threads, app=app_kw, supervisor=os.getpid()))
        return
    engine = Engine.open(path, threads=threads, read_only=read_only)
    app = make_app(engine, **app_kw)
    print(startup_line(path, host, port, keys, keys_file, allow_anonymous, limits, read_only, workers, len(engine)),
          file=sys.stderr, flush=True)
    # proxy_headers off: nothing here reads the client's address (the log has none), so
    # uvicorn's X-Forwarded-For middleware would only cost every request a pass
    server = _Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False,
                                    timeout_graceful_shutdown=30, proxy_headers=False))
    # the engine's and the libraries' objects, made once, out of the cyclic collector's
    # sight: its full collections would walk them all (p99 at 64 clients: ~80 -> ~45 ms)
    gc.collect()
    gc.freeze()
    try:
        server.run()
    finally:
        app.state.engine().close()
        engine.close()



def startup_line(path: str, host: str, port: int, keys: Keys, keys_file: str | None, allow_anonymous: bool,
                 limits: Limits | None, read_only: bool, workers: int, items: int | None = None) -> str:
    """What ``chrono serve`` says when it starts (stderr): the store, the address, how keys
    are given and how many of each role (never a key), and the limits."""
    lim = limits or Limits()
    url_host = f"[{host}]" if ":" in host else host
    n_scoped = len(keys.scopes)
    who = ("no keys (--no-auth, loopback only)" if allow_anonymous and not keys else
           f"keys from {keys_file or 'the environment'}: {len(keys.admin)} admin, {len(keys.read)} read"
           + (f", {n_scoped} scoped" if n_scoped else ""))
    what = f"{path}" + (f" ({items:,} items)" if items is not None else "") + (" read-only" if read_only else "")
    limits_s = ", ".join(f"{f.name}={getattr(lim, f.name)}" for f in dataclasses.fields(lim))
    procs = f", {workers} workers" if workers > 1 else ""
    return f"chrono serve: {what} on http://{url_host}:{port}{procs}; {who}; limits: {limits_s}"


def _reserve(host: str, port: int) -> Any:
    """The service's port, bound (not listening) by the supervisor of :func:`_serve_workers`:
    it holds the port (the one the OS picks for port 0) while each worker listens on its
    own socket at the same address (:func:`_port_socket`)."""
    import socket
    if not sys.platform.startswith("linux") or not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError("--workers needs Linux (its SO_REUSEPORT shares a port's connections out among processes)")
    family, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return _port_socket(family, addr, listen=False)



def _port_socket(family: int, addr: tuple, *, listen: bool) -> Any:
    """A TCP socket bound to ``addr`` with ``SO_REUSEPORT`` (the supervisor's, and each
    worker's, listening: the kernel hands each new connection to one of the listening
    sockets, by a hash of its addresses)."""
    import socket
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(addr)
        if listen:
            sock.listen(2048)  # uvicorn's backlog
    except BaseException:
        sock.close()
        raise
    return sock



def _serve_workers(workers: int, host: str, port: int, kw: dict) -> None:
    """``workers`` processes (started fresh: ``spawn``), each opening the store read-only and
    serving it with its own engine and event loop (:func:`_worker`) on its own listening
    socket at the port held here (``SO_REUSEPORT``; Linux): the kernel shares new
    connections out among them by a hash of their addresses (one socket shared by all
    would not: an asyncio loop accepts every pending connection at once, and one worker
    took all 16 of a test's). A worker that cannot start (the store
    unreadable, say) fails the whole start with its error. Then this process waits: SIGINT
    or SIGTERM is passed on to every worker as SIGTERM (each finishes its requests under
    way, as one process does); a worker that exits meanwhile stops the others and raises
    :class:`ServiceError` (a process manager restarts the service). The workers publish
    their counters to a private folder made here, and each one's ``/metrics`` sums them."""
    import builtins
    import multiprocessing
    import shutil
    import signal
    import tempfile
    from multiprocessing.connection import wait

    from .. import errors
    ctx = multiprocessing.get_context("spawn")
    sock = _reserve(host, port)
    kw = dict(kw, family=sock.family, address=sock.getsockname(),
              metrics=tempfile.mkdtemp(prefix="chrono-serve-metrics-"))  # private (0700); removed at the end
    stop: list = []
    old = {s: signal.signal(s, lambda signum, frame: stop.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    procs: list = []
    try:
        conns = {}
        for i in range(workers):
            r, w = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(i, w, kw), name=f"chrono-serve-{i}")
            p.start()
            w.close()
            procs.append(p)
            conns[r] = i
        opened = []
        while conns and not stop:  # every worker has opened the store, or one could not
            for c in wait(list(conns), timeout=0.5):
                i = conns.pop(c)
                try:
                    msg = c.recv()
                except EOFError:
                    c.close()
                    procs[i].join(5)
                    raise ServiceError(f"worker {i} exited before it was ready (exit status {procs[i].exitcode})",
                                       worker=i) from None
                opened.append(c)
                if msg[0] == "error":  # the worker's own error (the store's, the engine's, the OS's): raised here
                    cls = getattr(errors, msg[1], None) or getattr(builtins, msg[1], None)
                    if not (isinstance(cls, type) and issubclass(cls, (errors.ChronoError, OSError))):
                        raise ServiceError(f"worker {i} could not start: {msg[1]}: {msg[2]}", worker=i)
                    raise cls(msg[2])
        for c in opened:  # all open: now they listen (no connection goes to a worker still opening)
            try:
                c.send("listen")
            except OSError:
                pass  # that worker is gone: seen below
            c.close()
        while not stop:
            done = wait([p.sentinel for p in procs], timeout=0.5)
            for i, p in enumerate(procs):
                if p.sentinel in done and not stop:
                    p.join(5)
                    raise ServiceError(f"worker {i} exited (exit status {p.exitcode}) while serving; "
                                       "the other workers were stopped", worker=i)
    finally:
        for p in procs:
            if p.is_alive():
                os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            p.join(60)
            if p.is_alive():  # past uvicorn's own 30 s for requests under way
                p.kill()
                p.join()
        sock.close()
        shutil.rmtree(kw["metrics"], ignore_errors=True)
        for s, h in old.items():
            signal.signal(s, h)



def _end_with_parent(sig: int, parent: int) -> None:
    """Have the kernel send ``sig`` to this process when its parent (pid ``parent``) ends
    (Linux's ``PR_SET_PDEATHSIG``): a supervisor killed outright (SIGKILL, an OOM kill) must
    not leave its workers serving the port. Where the parent is already gone, ``sig`` now."""
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)



def _worker(index: int, ready: Any, kw: dict) -> None:
    """One worker process of :func:`_serve_workers`: the store opened read-only, the app
    made, "ready" (or the error) sent up the pipe ``ready``; once the supervisor says
    "listen" (every worker is ready), its socket listening (:func:`_port_socket`) and uvicorn on
    it until SIGTERM (SIGINT is the supervisor's to pass on: a terminal's Ctrl-C reaches
    every process of its group, and a second SIGINT would make uvicorn drop requests under
    way)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(signal.SIGTERM, kw["supervisor"])
    import uvicorn

    from ..engine import Engine
    try:
        engine = Engine.open(kw["path"], threads=kw["threads"], read_only=True)
        app = make_app(engine, worker=index, shared_metrics=kw["metrics"], **kw["app"])
    except Exception as e:  # noqa: BLE001 - the supervisor raises it
        ready.send(("error", type(e).__name__, str(e)))
        ready.close()
        sys.exit(1)
    server = _Server(uvicorn.Config(app, log_config=None, access_log=False, timeout_graceful_shutdown=30,
                                    proxy_headers=False), signals=(signal.SIGTERM,))
    gc.collect()
    gc.freeze()
    ready.send(("ready",))
    try:
        ready.recv()  # "listen", once every worker has opened the store
    except EOFError:  # the supervisor stopped before that
        sys.exit(0)
    ready.close()
    sock = _port_socket(kw["family"], kw["address"], listen=True)
    try:
        server.run(sockets=[sock])
    finally:
        app.state.engine().close()
        engine.close()
        folder = Path(kw["metrics"])  # the supervisor removes it; the last worker out, where it cannot
        for f in (folder / f"worker-{index}.json", folder / f".worker-{index}.json"):
            f.unlink(missing_ok=True)
        try:
            folder.rmdir()  # only once empty: the last worker out
        except OSError:
            pass



def _server_class() -> Any:
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, but a SIGINT / SIGTERM ends it with exit status 0 once it has
        shut down gracefully (uvicorn re-raises the signal, which kills the process before
        the engine is closed)."""

        signals = (signal.SIGINT, signal.SIGTERM)

        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            old = {s: signal.signal(s, self.handle_exit) for s in self.signals}
            try:
                yield
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
    return Server



def _Server(config: Any, signals: tuple | None = None) -> Any:
    server = _server_class()(config)
    if signals is not None:
        server.signals = signals
    return server
