"""The one SQLite file's whole schema: every package's steps (engine.store.migrations), in version order.

Whoever opens a Store hands it these (Store(path, MIGRATIONS)): the store sits below the packages whose
tables it holds and cannot gather them itself. A version two packages share (3) runs the reputation book's
part first, then the alerts', as it always has.
"""
from __future__ import annotations

from .alerts.migrations import MIGRATIONS as ALERTS
from .gateway.migrations import MIGRATIONS as GATEWAY
from .memory.migrations import MIGRATIONS as MEMORY
from .reputation.migrations import MIGRATIONS as REPUTATION
from .review.migrations import MIGRATIONS as REVIEW
from .store.migrations import MIGRATIONS as STORE
from .store.migrations import Migration, in_order

MIGRATIONS: tuple[Migration, ...] = in_order(STORE, REVIEW, REPUTATION, ALERTS, MEMORY, GATEWAY)
