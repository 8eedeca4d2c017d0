"""Named snapshots and a read replica's refresh.

``POST .../snapshots`` checkpoints the store and writes a full copy of it, as a store of its
own, to ``<snapshots>/<name>`` (``snapshots``: default ``<store>.snapshots`` beside the
store; ``name``: letters, digits, ``.``, ``_``, ``-``, at most 64, default the UTC time).
``POST .../snapshots/{name}/restore`` verifies the copy (read-only open), writes the live
store as a named copy ``pre-restore-<time>`` first, then writes the copy into the live store
as its new live snapshot (the store's own atomic checkpoint: a crash leaves the old state or
the restored one, never a mixture) and serves it. Writes wait while a snapshot or a restore
runs; reads go on, on the old state until the restored one is open.

Read replicas (``--read-only``): the store opened read-only (no writer lock, so any number of
processes can serve one store beside its writer); every write endpoint answers 403
``read_only``. With ``--refresh SECONDS`` the replica checks the store every that many
seconds and, when the writer has logged a write or checkpointed since, opens it again and
serves the new state (the old one answers the requests already under way; two copies are in
memory while it opens).
"""
from __future__ import annotations

import asyncio
import datetime as _dt
import os
import re
import stat
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._args import shown
from ..errors import ChronoError
from .context import HTTPError, Service, parse_json
from .encode import dumps
from .search import answer

#: the engine settings a store does not keep, carried to the engine a restore or a refresh opens
_SETTINGS = ("coalesce_group", "coalesce_wait", "partition_min")

SNAPSHOT_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def snapshot_name(raw: Any, field_: str = "name") -> str:
    if not isinstance(raw, str) or not SNAPSHOT_NAME.fullmatch(raw):
        raise HTTPError(422, field_, f"{field_} must be 1-64 letters, digits, '.', '_' or '-', not starting "
                                     f"with '.', got {shown(raw)}")
    return raw


def stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def snapshots_of(svc: Service) -> Path:
    """The snapshots folder (409 for an engine without a store)."""
    if svc.engine.path is None or svc.snapshots is None:
        raise HTTPError(409, "store", "this engine has no store to snapshot (serve a store path)")
    return svc.snapshots


def copy_to(engine: Any, target: Path) -> None:
    """A full copy of the store as it is in memory, written to ``target`` (new: not even
    a symbolic link there, which the copy would be written through)."""
    if os.path.lexists(target):
        raise HTTPError(409, "name", f"a snapshot named {target.name!r} exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    engine.save(target)


def checkpoint_and_copy(engine: Any, target: Path) -> None:
    engine.save()
    copy_to(engine, target)


async def snapshot(svc: Service, request: Request) -> Response:
    svc.collection(request)
    d = snapshots_of(svc)
    raw = await svc.body(request)
    obj = parse_json(raw) if raw.strip() else {}
    snap = snapshot_name(obj.get("name", stamp()))
    eng = svc.engine
    await svc.run(checkpoint_and_copy, eng, d / snap, read=False)
    return JSONResponse({"name": snap, "path": str(d / snap), "items": len(eng), "saved": str(eng.path)})


def listed(d: Path) -> bytes:
    """The named snapshots in ``d``: its entries that are snapshots (:func:`not_a_snapshot`)."""
    out = []
    if d.is_dir():
        for p in sorted(d.iterdir()):
            if SNAPSHOT_NAME.fullmatch(p.name) and not_a_snapshot(p) is None:
                t = _dt.datetime.fromtimestamp(os.lstat(p / "CURRENT").st_mtime, _dt.timezone.utc)
                out.append({"name": p.name, "created": t.isoformat()})
    return dumps({"snapshots": out})


async def snapshot_list(svc: Service, request: Request) -> Response:
    svc.collection(request)
    return answer(await svc.run(listed, snapshots_of(svc)))


def restore_from(svc: Service, src: Path) -> dict:
    """The store written back to the named copy ``src`` and served (module docstring); run
    under the write gate."""
    from ..engine import Engine
    why = not_a_snapshot(src)  # checked here, under the gate, just before the open
    if why == "missing":
        raise HTTPError(404, "snapshot", f"no snapshot named {src.name!r}")
    if why is not None:
        raise HTTPError(422, "snapshot", f"{src.name!r} in the snapshots folder is not a snapshot: {why}")
    old = svc.engine
    restored = Engine.open(src, read_only=True)  # verified before anything changes
    before = svc.snapshots / f"pre-restore-{stamp()}"
    copy_to(old, before)  # no checkpoint first: the live store is about to be replaced
    live = Path(old.path)
    settings = {a: getattr(old, a) for a in _SETTINGS}
    old.close()  # the writer lock is released; the old engine still answers reads
    try:
        restored.save(live)  # the store's atomic checkpoint: old state or restored, never a mixture
        new = Engine.open(live, threads=old.threads)
    except BaseException:
        svc.engine = Engine.open(live, threads=old.threads)  # whichever state the store holds
        raise
    for a, v in settings.items():
        setattr(new, a, v)
    svc.engine = new
    return {"restored": src.name, "items": len(new), "before": before.name}


async def snapshot_restore(svc: Service, request: Request) -> Response:
    svc.collection(request)
    d = snapshots_of(svc)
    snap = snapshot_name(request.path_params.get("name"), "snapshot")
    return JSONResponse(await svc.run(restore_from, svc, d / snap, read=False))


def not_a_snapshot(entry: Path) -> str | None:
    """Why ``entry``, in the snapshots folder, is not a named snapshot ("missing" when there
    is nothing there), or None: it must be a folder, not a symbolic link, holding a store
    whose seal (``CURRENT``, opened as a regular file) names a folder in it that is no link
    either; the store's files are then opened without following links (storage/). A link
    anywhere from the snapshots folder down would let a restore replace the live store
    with whatever store it points to, anywhere."""
    from .. import storage
    why = not_a_folder(entry, "it")
    if why is not None:
        return why
    try:
        live = storage.current(entry)["snapshot"]
    except (ChronoError, OSError) as e:
        return f"not a store ({shown(str(e))})"
    why = not_a_folder(entry / live, f"its snapshot folder {live}")
    return f"its snapshot folder {live} is missing" if why == "missing" else why


def not_a_folder(path: Path, what: str) -> str | None:
    """Why ``path`` is not a folder ("missing" when absent), a symbolic link not followed."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"{what} cannot be read ({e.strerror})"
    if stat.S_ISLNK(mode):
        return f"{what} is a symbolic link"
    return None if stat.S_ISDIR(mode) else f"{what} is not a folder"


def store_version(root: Path) -> tuple:
    """What changes when the store's writer logs a write or checkpoints: the live snapshot
    its seal names (``CURRENT``, read as :func:`storage.current` reads it) and that
    snapshot's log's size and modification time; None parts where a file is missing or
    unreadable (between a checkpoint's steps, a damaged seal: the open then says why)."""
    from .. import _wal, storage
    try:
        snap = storage.current(root)["snapshot"]
    except (ChronoError, OSError):
        return (None, None)
    try:
        st = (root / snap / _wal.LOG_NAME).stat()
        return (snap, (st.st_size, st.st_mtime_ns))
    except OSError:
        return (snap, None)


def reopen(svc: Service, root: Path) -> Any:
    """The store opened again (read-only), with the served engine's settings."""
    from ..engine import Engine
    old = svc.engine
    new = Engine.open(root, read_only=True, threads=old.threads)
    for a in _SETTINGS:
        setattr(new, a, getattr(old, a))
    return new


async def refresh_forever(svc: Service, root: Path, every: float) -> None:
    """A replica's loop: every ``every`` seconds, the store opened again if it changed
    (a failed open is logged and tried again at the next change check)."""
    loop = asyncio.get_running_loop()
    seen = await loop.run_in_executor(None, store_version, root)
    while True:
        await asyncio.sleep(every)
        now = await loop.run_in_executor(None, store_version, root)
        if now == seen:
            continue
        try:
            svc.engine = await loop.run_in_executor(None, reopen, svc, root)
            seen = now
            svc.refreshes += 1
        except Exception as e:  # noqa: BLE001 - the old state is served on; logged, tried again
            svc.log.event(event="refresh failed", type=type(e).__name__, message=str(e)[:500])
