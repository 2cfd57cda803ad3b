"""[store] in an engine settings file: where a desk keeps its records when neither --db nor $QUORUM_DB says.

url: a team's PostgreSQL ("postgresql://role@host/quorum"; no password: ~/.pgpass, PGSERVICE or $PGPASSWORD),
or a SQLite file; "" keeps the desk's own file in the user data dir. engine.config checks it as the store
would read it (engine.store.target).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoreSettings:
    url: str = ""
