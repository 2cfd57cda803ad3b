"""Traces adapter: one question's or message's whole chain, by trace id."""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from .core import Adapter, Attempt


class TracesAdapter(Adapter):
    sig_loaded = Signal(str, object)           # trace id, tuple[TraceLine]: one question's or message's whole chain
    sig_failed = Signal(str, str)              # trace id, why it could not be shown (also sent to sig_error)

    def open(self, trace_id: str) -> asyncio.Task | None:
        """Reads the whole chain: sig_loaded(trace_id, lines), or sig_failed(trace_id, why) and sig_error."""
        trace_id = (trace_id or "").strip()
        if not trace_id:
            message = "no trace id given: paste the 32-hex trace id an answer, an alert or the Gateway tab shows"
            self.sig_failed.emit(trace_id, message)
            self.core.report_error(message)
            return None
        if not self.core.require_ready("traces cannot be read", lambda m: self.sig_failed.emit(trace_id, m)):
            return None
        return self.core.spawn(self._open(trace_id), "trace.open")

    async def _open(self, trace_id: str) -> None:
        outcome, lines = await self.core.attempt(lambda: self.engine.gateway.trace(trace_id),
                                                 context=f"trace {trace_id} could not be read",
                                                 refused=lambda m: self.sig_failed.emit(trace_id, m))
        if outcome is not Attempt.DONE:
            return
        if not lines:
            message = (f"no trace {trace_id!r} in the store (trace ids are the 32-hex ids an answer, an alert "
                       f"and the Gateway tab show)")
            self.sig_failed.emit(trace_id, message)
            self.core.report_error(message)
            return
        self.sig_loaded.emit(trace_id, tuple(lines))
