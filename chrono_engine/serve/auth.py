"""API keys: ``Authorization: Bearer KEY`` (or ``X-API-Key: KEY``). Keys come from the
environment (``CHRONO_API_KEYS``: admin keys, ``CHRONO_READ_KEYS``: read-only keys,
comma-separated) or a file (lines ``admin KEY`` / ``read KEY``). No key or an unknown key:
401; a read-only key on a write: 403. Keys are compared in constant time against every
configured key and never logged. A server without keys refuses to start unless
``allow_anonymous`` (``--no-auth``), which only a loopback address may use."""
from __future__ import annotations

import hmac
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

from ..errors import ConfigError
from .refusals import HTTPError

#: the roles a route may ask: read, or read and write
READ, WRITE = "read", "admin"


@dataclass
class Keys:
    """API keys by role. ``admin`` keys read and write; ``read`` keys only read."""

    admin: list[bytes] = field(default_factory=list)
    read: list[bytes] = field(default_factory=list)

    @classmethod
    def from_env(cls, path: str | os.PathLike | None = None) -> Keys:
        """Keys from ``CHRONO_API_KEYS`` / ``CHRONO_READ_KEYS`` and, when given, a file of
        ``admin KEY`` / ``read KEY`` lines (``#`` comments). A malformed line is a
        ConfigError naming its number (not its content)."""
        k = cls([s.strip().encode() for s in os.environ.get("CHRONO_API_KEYS", "").split(",") if s.strip()],
                [s.strip().encode() for s in os.environ.get("CHRONO_READ_KEYS", "").split(",") if s.strip()])
        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"keys file {path}: cannot read it ({type(e).__name__})") from None
            for i, line in enumerate(text.splitlines(), 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                parts = line.split()
                if len(parts) != 2 or parts[0] not in ("admin", "read") or len(parts[1]) < 8:
                    raise ConfigError(f"keys file {path}, line {i}: expected 'admin KEY' or 'read KEY' "
                                      "(a key of at least 8 characters)")
                (k.admin if parts[0] == "admin" else k.read).append(parts[1].encode())
        return k

    def role(self, given: bytes | None) -> str | None:
        """The role of a presented key (None: none matches). Every configured key is
        compared, in constant time, whatever matches first."""
        if not given:
            return None
        found = None
        for role, keys in ((WRITE, self.admin), (READ, self.read)):
            for key in keys:
                if hmac.compare_digest(key, given) and found is None:
                    found = role
        return found

    def __bool__(self) -> bool:
        return bool(self.admin or self.read)


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
              given: Callable[[], bytes | None]) -> None:
    """Refuse a request whose key (``given()``: the presented key, read only when a key is
    needed) may not take ``role`` (401 / 403); a write on a read replica is a 403 too."""
    if role is not None and (keys or not allow_anonymous):
        have = keys.role(given())
        if have is None:
            raise HTTPError(401, "authorization", "a valid API key is required")
        if role == WRITE and have != WRITE:
            raise HTTPError(403, "authorization", "this key may only read")
    if role == WRITE and read_only:
        raise HTTPError(403, "read_only", "this service is a read replica (chrono serve --read-only): "
                                          "send writes to the store's writer")
