"""The gateway's sessions, one per question in flight: the one place a question's GatewaySession is made.

The pipeline opens a question's session; the memory store and the tool broker screen through `screen`, so a
message that belongs to a question in flight is screened and logged in that question's trace (and its flags
reach the Gateway panel).
"""
from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator

from .decision import Screening
from .envelope import Envelope
from .gateway import Gateway
from .session import GatewaySession


class GatewaySessions:
    def __init__(self, gateway: Gateway | None, clock: Callable[[], float] = time.time) -> None:
        self.gateway = gateway
        self.clock = clock
        self._open: dict[str, GatewaySession] = {}     # questions in flight, by trace id

    @property
    def enabled(self) -> bool:
        """A gateway screens (without one every message passes, and is still traced)."""
        return self.gateway is not None

    def new(self, trace_id: str) -> GatewaySession:
        return GatewaySession(self.gateway, trace_id, self.clock)

    @contextlib.contextmanager
    def in_flight(self, session: GatewaySession) -> Iterator[GatewaySession]:
        """While the question runs, envelopes of its trace are screened in its session."""
        self._open[session.trace_id] = session
        try:
            yield session
        finally:
            self._open.pop(session.trace_id, None)

    def screen(self, envelope: Envelope) -> Screening:
        """The gateway for the memory store and the tool broker (a message of no question in flight gets a
        session of its own)."""
        session = self._open.get(envelope.parent_trace_id) or GatewaySession(self.gateway, envelope.parent_trace_id)
        return session.screen(envelope)
