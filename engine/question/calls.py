"""The fleet as a question's stages ask it: who may be asked, and everyone's call at once under the
question's deadline. Every call's outcome is recorded in the registry and told to listeners; a call still
under way at the deadline is LATE in the answer and goes on in the background, where its reply or failure,
when it comes, is that agent's recorded outcome (and the engine audits it: on_late)."""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from typing import Callable

from ..agents.client import AgentClient, CallResult, outcome, with_mode
from ..events import AgentCalled, AgentChanged, AgentsKeptOff, Emit
from ..registry import AgentRegistry, AgentView
from ..types import AgentOutcome, CallStatus, RiskTier, Role
from .asked import Deadline

OnLate = Callable[[AgentOutcome, str], None]


class AgentCalls:
    def __init__(self, client: AgentClient, registry: AgentRegistry, emit: Emit,
                 clock: Callable[[], float] = time.time, on_late: OnLate | None = None) -> None:
        self.client = client
        self.registry = registry
        self.emit = emit
        self.clock = clock
        self.on_late = on_late
        self._late: set[asyncio.Task] = set()             # calls going on past their question's deadline

    def pick(self, role: Role, limit: int, tier: RiskTier, trace_id: str) -> list[AgentView]:
        views = self.registry.eligible(role, tier)
        kept_off = self.registry.ineligible(role, tier)
        if kept_off:
            self.emit(AgentsKeptOff(role, tuple(kept_off), trace_id, self.clock()))
        if not limit:
            return views
        chosen = views[:limit]
        # An agent on probation ranks last by score and low-risk paths take few agents: it gets a seat
        # beside them (its vote capped by the book), or it could never earn its way back.
        probation = [v for v in views[limit:] if self.registry.on_probation(v.spec.id)]
        return chosen + probation[:1]

    def reputations(self) -> dict[str, float] | None:
        return dict(self.registry.trust.snapshot()) if self.registry.trust is not None else None

    async def fan_out(self, trace_id: str, agents: list[AgentView], call,
                      deadline: Deadline | None = None) -> list[CallResult]:
        """Every agent's call at once, each under its own timeout_s; with a deadline, returns when it passes."""
        tasks, asked_at = [], asyncio.get_running_loop().time()
        for v in agents:
            self.emit(AgentChanged(self.registry.begin(v.spec.id), trace_id, self.clock()))
            tasks.append(asyncio.ensure_future(outcome(v.spec, call(v))))
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=deadline.remaining() if deadline else None)
        except asyncio.CancelledError:       # the question was cancelled: its calls go with it
            for task in tasks:
                task.cancel()
            raise
        results = []
        for view, task in zip(agents, tasks):
            if task.done():
                result = self._moded(view, task.result())     # outcome() never raises
                self._record(result.outcome, trace_id)
            else:
                result = CallResult(deadline.late_outcome(view.spec, asked_at), None)
                self.emit(AgentCalled(result.outcome, trace_id, self.clock()))
                self._late.add(task)
                task.add_done_callback(functools.partial(self._late_reply, view, trace_id, deadline))
            results.append(result)
        return results

    def _moded(self, view: AgentView, result: CallResult) -> CallResult:
        return with_mode(result, self.client.mode_of(view.spec))

    def _record(self, outcome_: AgentOutcome, trace_id: str) -> None:
        self.emit(AgentChanged(self.registry.record(outcome_), trace_id, self.clock()))
        self.emit(AgentCalled(outcome_, trace_id, self.clock()))

    def _late_reply(self, view: AgentView, trace_id: str, deadline: Deadline, task: asyncio.Task) -> None:
        """A call that outlived its question's deadline ended: recorded as late if it replied, or as the failure
        it was. A call cancelled at shutdown records nothing."""
        self._late.discard(task)
        if task.cancelled():
            return
        result = self._moded(view, task.result())
        late = result.outcome
        if late.status is CallStatus.OK:
            late = dataclasses.replace(late, status=CallStatus.LATE, n_items=0,
                                       error=f"replied after {late.latency_ms / 1000:.1f} s, past the question's "
                                             f"{deadline.seconds:g} s deadline: decided without it")
        self._record(late, trace_id)
        if self.on_late is not None:
            self.on_late(late, trace_id)

    @property
    def late(self) -> int:
        """Calls still going on past their questions' deadlines."""
        return len(self._late)

    async def aclose(self) -> None:
        """Cancels the calls still running past their questions' deadlines (the engine is closing)."""
        for task in list(self._late):
            task.cancel()
        if self._late:
            await asyncio.gather(*self._late, return_exceptions=True)
        self._late.clear()
