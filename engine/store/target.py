"""Where the store lives: a desk's own SQLite file, or a team's PostgreSQL database named by a URL.

A PostgreSQL URL names the server, the database and the role, never a password: a URL ends up in shell
history, settings files and logs. The password comes from where libpq looks for it (~/.pgpass, a
service file named by PGSERVICE, or $PGPASSWORD). A server that is not on this machine is reached over
TLS only: without an sslmode the URL gets sslmode=require, and one that turns TLS off is refused.
"""
from __future__ import annotations

import enum
import getpass
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import InputError
from ..urls import is_loopback

POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_TLS_OFF = frozenset({"disable", "allow", "prefer"})
_TLS_ON = frozenset({"require", "verify-ca", "verify-full"})


class Backend(enum.Enum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class StoreTarget:
    backend: Backend
    url: str                    # what SQLAlchemy connects to (no password in it)
    path: Path | None = None    # the SQLite file; None on PostgreSQL

    @property
    def shown(self) -> str:
        """How messages name the store: the file, or the URL (which holds no secret)."""
        return str(self.path) if self.path is not None else self.libpq_url

    @property
    def libpq_url(self) -> str:
        """The PostgreSQL URL as libpq (psycopg on its own) takes it, without SQLAlchemy's driver name."""
        return self.url.replace("postgresql+psycopg://", "postgresql://", 1)

    @property
    def shared(self) -> bool:
        return self.backend is Backend.POSTGRESQL

    @property
    def role(self) -> str | None:
        """The PostgreSQL role this URL signs in as, as libpq picks it (the URL's, else $PGUSER, else this user's
        login name); None for a SQLite file. The store reads it back from the server (Store.signed_in)."""
        if self.path is not None:
            return None
        return urlsplit(self.url).username or os.environ.get("PGUSER") or getpass.getuser()

    def exists(self) -> bool:
        """Whether there is a store to read yet: the file is there (a server's database always is)."""
        return self.path is None or self.path.is_file()

    def __str__(self) -> str:
        return self.shown


def on_this_machine(host: str) -> bool:
    """A Unix socket (no host, or a folder) or a loopback address: the traffic never leaves this machine."""
    return not host or host.startswith("/") or is_loopback(host)


def store_target(value: str | Path | StoreTarget) -> StoreTarget:
    """A --db value, [store] url or $QUORUM_DB read as a store: a postgresql:// URL, or else a SQLite file."""
    if isinstance(value, StoreTarget):
        return value
    text = str(value).strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if not scheme:
        if not text:
            raise InputError("store: give a SQLite file or a postgresql:// URL")
        return StoreTarget(Backend.SQLITE, "", Path(text).expanduser())
    if scheme not in POSTGRES_SCHEMES:
        raise InputError(f"store {text!r}: {scheme}:// is not a store Quorum knows; give a SQLite file or a "
                         "postgresql://role@host/database URL")
    return StoreTarget(Backend.POSTGRESQL, _postgres_url(text))


def _postgres_url(text: str) -> str:
    parts = urlsplit(text)
    shown = urlunsplit(("postgresql", parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
    try:
        parts.port
    except ValueError as exc:
        raise InputError(f"store {shown}: the port is not a number ({exc})") from None
    if parts.password is not None:
        raise InputError(f"store {shown}: the URL holds a password, which would end up in logs and shell history; "
                         "put it in ~/.pgpass, a service file (PGSERVICE) or $PGPASSWORD and leave it out of the URL")
    database = parts.path.lstrip("/")
    if not database or "/" in database:
        raise InputError(f"store {shown}: name one database after the host, as in postgresql://role@host/quorum")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if "password" in query:
        raise InputError(f"store {shown}: the URL holds a password parameter; put the password in ~/.pgpass, a "
                         "service file (PGSERVICE) or $PGPASSWORD")
    host = parts.hostname or query.get("host", "")
    mode = query.get("sslmode")
    if not on_this_machine(host):
        if mode is None:
            query["sslmode"] = "require"
        elif mode in _TLS_OFF:
            raise InputError(f"store {shown}: sslmode={mode} would send the team's records in the clear to {host}; "
                             "a server that is not on this machine is reached over TLS (sslmode=require, verify-ca "
                             "or verify-full)")
        elif mode not in _TLS_ON:
            raise InputError(f"store {shown}: sslmode={mode!r} is not one of {', '.join(sorted(_TLS_ON | _TLS_OFF))}")
    return urlunsplit(("postgresql+psycopg", parts.netloc, "/" + database, urlencode(query), ""))
