"""API keys: ``Authorization: Bearer KEY`` (or ``X-API-Key: KEY``). Keys come from the
environment (``CHRONO_API_KEYS``: admin keys, ``CHRONO_READ_KEYS``: read-only keys,
comma-separated) or a file (lines ``admin KEY`` / ``read KEY``, each optionally followed by
a filter as JSON: ``read KEY {"tenant": "acme"}``, a key *scoped* to the rows that filter
passes; docs/serve.md, "Scoped keys"). No key or an unknown key: 401; a read-only key on a
write: 403; a scoped key on an endpoint that would show or change other rows (metrics,
snapshots): 403. Keys are compared in constant time against every configured key and never
logged. A server without keys refuses to start unless ``allow_anonymous`` (``--no-auth``),
which only a loopback address may use."""
from __future__ import annotations

import hmac
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any, NamedTuple

from ..errors import ConfigError, QueryError
from ..search import filters
from .refusals import HTTPError

#: the roles a route may ask: read, or read and write
READ, WRITE = "read", "admin"
#: a keys file's line: the role, the key (up to a space or ``#``), the rest
_LINE = re.compile(r"\s*(\S+)\s+([^\s#]+)\s*(.*)$")


class Caller(NamedTuple):
    """Who a request's key is: its role, and its filter (None: every row)."""

    role: str
    where: filters.Where | None


@dataclass
class Keys:
    """API keys by role. ``admin`` keys read and write; ``read`` keys only read.
    ``scopes``: the keys (of either role) bound to a filter (a dict in the ``where=`` form,
    or a :class:`~chrono_engine.search.filters.Where`), which every request they make is
    limited to (docs/serve.md, "Scoped keys")."""

    admin: list[bytes] = field(default_factory=list)
    read: list[bytes] = field(default_factory=list)
    scopes: dict[bytes, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        known = set(self.admin) | set(self.read)
        for key, where in list(self.scopes.items()):
            if key not in known:
                raise ConfigError("a scoped key must be one of the admin or read keys")
            try:
                w = filters.parse(where)
            except QueryError as e:
                raise ConfigError(f"a key's filter: {e}") from None
            if w is None:
                raise ConfigError("a key's filter must be a filter (a JSON object), not null")
            self.scopes[key] = w

    @classmethod
    def from_env(cls, path: str | os.PathLike | None = None) -> Keys:
        """Keys from ``CHRONO_API_KEYS`` / ``CHRONO_READ_KEYS`` and, when given, a file of
        ``admin KEY`` / ``read KEY`` lines (``#`` comments), each optionally followed by a
        filter as JSON (the key is then scoped to it). A malformed line is a ConfigError
        naming its number (not its content)."""
        k = cls([s.strip().encode() for s in os.environ.get("CHRONO_API_KEYS", "").split(",") if s.strip()],
                [s.strip().encode() for s in os.environ.get("CHRONO_READ_KEYS", "").split(",") if s.strip()])
        scopes: dict[bytes, Any] = {}
        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"keys file {path}: cannot read it ({type(e).__name__})") from None
            for i, line in enumerate(text.splitlines(), 1):
                if not line.split("#", 1)[0].strip():
                    continue
                m = _LINE.match(line)
                if m is None or m.group(1) not in ("admin", "read") or len(m.group(2)) < 8:
                    raise ConfigError(f"keys file {path}, line {i}: expected 'admin KEY' or 'read KEY' "
                                      "(a key of at least 8 characters), optionally followed by a filter as JSON")
                role, key, rest = m.group(1), m.group(2).encode(), m.group(3)
                (k.admin if role == "admin" else k.read).append(key)
                if rest and not rest.startswith("#"):
                    scopes[key] = _filter_of(rest, path, i)
        k.scopes.update(scopes)
        k.__post_init__()
        return k

    def caller(self, given: bytes | None) -> Caller | None:
        """The role and filter of a presented key (None: none matches). Every configured
        key is compared, in constant time, whatever matches first."""
        if not given:
            return None
        found = None
        for role, keys in ((WRITE, self.admin), (READ, self.read)):
            for key in keys:
                if hmac.compare_digest(key, given) and found is None:
                    found = (role, key)
        return None if found is None else Caller(found[0], self.scopes.get(found[1]))

    def role(self, given: bytes | None) -> str | None:
        """The role of a presented key (None: none matches)."""
        c = self.caller(given)
        return None if c is None else c.role

    def __bool__(self) -> bool:
        return bool(self.admin or self.read)


def _filter_of(rest: str, path: Any, line: int) -> Any:
    """A keys file line's filter: a JSON object, then nothing or a ``#`` comment."""
    try:
        obj, end = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        obj, end = None, 0
    tail = rest[end:].strip()
    if not isinstance(obj, dict) or (tail and not tail.startswith("#")):
        raise ConfigError(f"keys file {path}, line {line}: after the key, a filter as a JSON object "
                          '(read KEY {"tenant": "acme"}), then nothing or a # comment')
    try:
        filters.parse(obj)
    except QueryError as e:
        raise ConfigError(f"keys file {path}, line {line}: the key's filter: {e}") from None
    return obj


def presented(auth: str, key: str | None) -> bytes | None:
    """The key a request presents: ``Authorization: Bearer KEY``, else ``X-API-Key``
    (header values as Starlette decodes them: latin-1)."""
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip().encode("utf-8", "surrogateescape")
    return key.encode("utf-8", "surrogateescape") if key else None


def need_keys(keys: Keys, allow_anonymous: bool) -> None:
    if not keys and not allow_anonymous:
        raise ConfigError("no API keys (set CHRONO_API_KEYS / CHRONO_READ_KEYS or a keys file); "
                          "pass allow_anonymous=True (--no-auth) for a loopback-only development server")


def authorize(keys: Keys, allow_anonymous: bool, read_only: bool, role: str | None,
              given: Callable[[], bytes | None], *, unscoped: bool = False) -> filters.Where | None:
    """Refuse a request whose key (``given()``: the presented key, read only when a key is
    needed) may not take ``role`` (401 / 403); a write on a read replica is a 403 too, and
    so is a scoped key on a route that is ``unscoped`` only. Returns the key's filter
    (None: every row)."""
    where = None
    if role is not None and (keys or not allow_anonymous):
        who = keys.caller(given())
        if who is None:
            raise HTTPError(401, "authorization", "a valid API key is required")
        if role == WRITE and who.role != WRITE:
            raise HTTPError(403, "authorization", "this key may only read")
        if unscoped and who.where is not None:
            raise HTTPError(403, "authorization", "this key is scoped to a filter: metrics and snapshots "
                                                  "describe or change every row, and need a key without one")
        where = who.where
    if role == WRITE and read_only:
        raise HTTPError(403, "read_only", "this service is a read replica (chrono serve --read-only): "
                                          "send writes to the store's writer")
    return where
