"""A fake engine behind the real EngineService, for panel tests that need no fleet.

The console's only door is EngineService; its adapters call a small engine surface and its one routing
table turns typed engine events into Qt signals. FakeEngine implements that surface in memory:

- reads return what the test gave it (review items, score history, alerts, gateway decisions, traces);
- every call an adapter makes is recorded in `calls` as (name, args), so a test asserts what the panel
  asked the engine to do, and the outcome it fakes is what a real engine returns (a decided item, an
  acknowledged alert, an InputError for an unknown id, ...);
- `emit(event)` delivers a typed engine event (engine.events, recorded.py builds realistic ones) through
  the service's real routing table, exactly as the engine's own listener call does.

`fake_service(...)` gives a started service (phase READY) over a FakeEngine. Features add their surface
here, or subclass FakeEngine in their own test module.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Sequence

from engine import AgentState, AgentView, Answer, InputError, ReviewerTally, RiskTier, ShiftTally, load_settings
from engine.alerts import AlertRow, Silence, muting
from engine.alerts.silences import check_request
from engine.events import AlertChanged, AlertsRaised, EngineReady, SilencesChanged
from engine.review import ReviewItem, ReviewStatus

from console.service import EngineService


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple


class FakeReviewQueue:
    def __init__(self, engine: "FakeEngine", items: Iterable[ReviewItem]) -> None:
        self._engine = engine
        self.by_id: dict[int, ReviewItem] = {i.id: i for i in items}

    async def pending(self) -> list[ReviewItem]:
        return sorted((i for i in self.by_id.values() if i.pending), key=lambda i: (i.created_at, i.id))

    async def items(self, limit: int = 100, status: str = "all") -> list[ReviewItem]:
        items = [i for i in self.by_id.values() if status == "all" or i.status.value == status]
        return sorted(items, key=lambda i: (not i.pending, -(i.decided_at or 0.0), -i.id))[:limit]

    async def get(self, item_id: int) -> ReviewItem | None:
        return self.by_id.get(int(item_id))

    async def shift(self, hours: float | None = None) -> ShiftTally:
        """Every decision the fake holds, by who made it (the real count: tests/engine/test_review_shift.py)."""
        decided: dict[str, dict[str, int]] = {}
        for item in self.by_id.values():
            if not item.pending:
                counts = decided.setdefault(item.decided_by, {"approved": 0, "rejected": 0})
                counts[item.status.value] += 1
        return ShiftTally(0.0, hours or 8.0, tuple(ReviewerTally(who, **n) for who, n in sorted(decided.items())))


class FakeReputationTables:
    def __init__(self, engine: "FakeEngine", history: Iterable, alerts: Iterable[AlertRow]) -> None:
        self._engine = engine
        self.history_points = list(history)
        self.alert_rows: dict[int, AlertRow] = {a.id: a for a in alerts}

    async def history(self, since: float = 0.0) -> list:
        return [p for p in self.history_points if p.at >= since]

    async def alerts(self, open_only: bool = False, limit: int = 200) -> list[AlertRow]:
        rows = sorted(self.alert_rows.values(), key=lambda a: (-a.at, -a.id))
        return [a for a in rows if a.open or not open_only][:limit]

    async def acknowledge(self, alert_id: int, by: str, comment: str = "") -> AlertRow:
        return await self._engine.acknowledge_alert(alert_id, by, comment)


class FakeAuditLog:
    """The audit trail as canned rows (newest first); a verification that finds it intact."""

    def __init__(self, rows: Iterable = ()) -> None:
        self.rows = tuple(rows)

    async def query(self, filter) -> tuple:
        rows = [r for r in self.rows if (not filter.actor or r.actor == filter.actor)
                and (not filter.trace_id or r.trace_id == filter.trace_id)]
        return tuple(rows if filter.limit is None else rows[:filter.limit])

    async def actors(self) -> tuple[str, ...]:
        return tuple(sorted({r.actor for r in self.rows}))

    async def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({r.type for r in self.rows}))

    async def verify(self):
        from engine.store.audit_log import ChainStatus
        return ChainStatus(True, len(self.rows), None, f"{len(self.rows)} events check out")


class FakeMemory:
    """Agents' memory with nothing in it (a fleet whose generators never wrote any)."""

    async def namespaces(self) -> tuple:
        return ()

    async def entries(self, namespace=None, include_inactive: bool = False) -> tuple:
        return ()

    async def snapshots(self, namespace=None) -> tuple:
        return ()


class FakeTools:
    """The tool broker with no call yet."""

    async def pending(self) -> tuple:
        return ()

    async def calls(self, limit: int = 200) -> tuple:
        return ()

    async def outbox(self, limit: int = 100) -> tuple:
        return ()


class Face:
    """One of the Engine's faces over the fake: a name maps to the fake's method of that name (a str, looked
    up when used), to a value read when used (a callable of no argument), or to a plain value."""

    def __init__(self, engine: "FakeEngine", **names: Any) -> None:
        self._engine, self._names = engine, names

    def __getattr__(self, name: str) -> Any:
        try:
            target = self._names[name]
        except KeyError:
            raise AttributeError(name) from None
        if isinstance(target, str):
            return getattr(self._engine, target)
        return target() if callable(target) else target


class FakeEngine:
    def __init__(self, agents: Sequence[AgentView] = (), *, reviews: Iterable[ReviewItem] = (),
                 history: Iterable = (), alerts: Iterable[AlertRow] = (), decisions: Iterable = (),
                 traces: dict[str, tuple] | None = None, answers: Iterable[Answer] = (), audit_rows: Iterable = (),
                 silences: Iterable[Silence] = (), settings=None, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings or load_settings()
        self.clock = clock
        self.calls: list[Call] = []
        self._listeners: list[Callable[[object], None]] = []
        self._agents: dict[str, AgentView] = {v.spec.id: v for v in agents}
        self.review = FakeReviewQueue(self, reviews)
        self.trust = SimpleNamespace(tables=FakeReputationTables(self, history, alerts))
        self.silence_rows: dict[int, Silence] = {s.id: s for s in silences}
        self.decisions = tuple(decisions)
        self.traces = dict(traces or {})
        self.answers = list(answers)
        self.audit_log = FakeAuditLog(audit_rows)
        self.memory = FakeMemory()
        self.tools = FakeTools()
        self.corpus_index = None            # the corpus index's latest progress (a test sets it, or emits events)
        self.closed = False
        self.signed_in: str | None = None   # a team store's role (a test sets it); None: the desk's own file
        self.read_only = False              # a viewer's desk (a test sets it)
        # The Engine's faces (engine/facades) as the console's adapters reach them, each name read from the fake's
        # own methods when it is called (so a subclass's stop_fleet or decide_many is the face's).
        self.fleet = Face(self, agents="agents", start="start_fleet", stop="stop_fleet",
                          config=SimpleNamespace(agents=[v.spec for v in agents]))
        self.questions = Face(self, ask="ask")
        self.reviews = Face(self, decide="decide", decide_many="decide_many", claim="claim", unclaim="unclaim", pending=lambda: self.review.pending,
                            items=lambda: self.review.items, get=lambda: self.review.get,
                            shift=lambda: self.review.shift)
        self.reputation = Face(self, quarantine="quarantine", release="release", settings=self.settings.reputation,
                               history=lambda: self.trust.tables.history, alerts=lambda: self.trust.tables.alerts)
        self.alerts = Face(self, alerts="alerts_list", silences="silences", acknowledge="acknowledge_alert",
                           silence="silence_alerts", end_silence="end_silence")
        self.corpus = Face(self, reindex="reindex_corpus", progress=lambda: self.corpus_index)
        self.gateway = Face(self, decisions="gateway_decisions", trace="trace")
        self.cascade = SimpleNamespace(theta=self.settings.cascade.theta)
        self.tools.roles = {v.spec.id: v.spec.role for v in agents}

    @property
    def audit(self):
        return self.audit_log

    # --- events ------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[object], None]) -> None:
        self._listeners.append(listener)

    def emit(self, *events: object) -> None:
        """Delivers events as the engine does: synchronously, to every listener, in order."""
        for event in events:
            for listener in list(self._listeners):
                listener(event)

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append(Call(name, args))

    def called(self, name: str) -> list[tuple]:
        return [c.args for c in self.calls if c.name == name]

    # --- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        self._record("start")
        self.emit(EngineReady(sum(v.state is AgentState.UP for v in self._agents.values()), self.clock()))

    async def aclose(self) -> None:
        self._record("aclose")
        self.closed = True

    def agents(self) -> tuple[AgentView, ...]:
        return tuple(self._agents.values())

    async def reindex_corpus(self, operator: str):
        self._record("reindex_corpus", operator)

    # --- questions -----------------------------------------------------------------------------
    async def ask(self, question: str, tier: RiskTier | None = None, trace_id: str | None = None) -> Answer:
        self._record("ask", question, tier, trace_id)
        if not question.strip():
            raise InputError("the question is empty")
        if not self.answers:
            raise InputError("the fake engine has no answer left for this question")
        await asyncio.sleep(0)
        return self.answers.pop(0)

    # --- reviews -------------------------------------------------------------------------------
    async def decide(self, item_id: int, approve: bool, operator: str, reason: str, note: str = "") -> ReviewItem:
        self._record("decide", item_id, approve, operator, reason, note)
        item = self.review.by_id.get(int(item_id))
        if item is None:
            raise InputError(f"no review item #{item_id}")
        if not item.pending:
            raise InputError(f"review item #{item_id} was already {item.status.value} by {item.decided_by} "
                             f"({item.reason}); a decision is final")
        decided = dataclasses.replace(item, status=ReviewStatus.APPROVED if approve else ReviewStatus.REJECTED,
                                      decided_by=operator, reason=reason, note=note, decided_at=self.clock())
        self.review.by_id[decided.id] = decided
        return decided

    async def claim(self, item_id: int, operator: str) -> ReviewItem:
        """As the queue claims (engine.review.queue): refused while another operator's lease runs."""
        self._record("claim", item_id, operator)
        item = self.review.by_id[int(item_id)]
        holder = item.holder(self.clock())
        if holder and holder != operator:
            raise InputError(f"review item #{item_id} is claimed by {holder}")
        claimed = dataclasses.replace(item, claimed_by=operator, claimed_until=self.clock() + 900.0)
        self.review.by_id[claimed.id] = claimed
        return claimed

    async def unclaim(self, item_id: int, operator: str) -> ReviewItem:
        self._record("unclaim", item_id, operator)
        item = dataclasses.replace(self.review.by_id[int(item_id)], claimed_by="", claimed_until=None)
        self.review.by_id[item.id] = item
        return item

    # --- trust -----------------------------------------------------------------------------------
    def _known(self, agent_id: str) -> AgentView:
        if agent_id not in self._agents:
            raise InputError(f"no agent {agent_id!r} in the fleet")
        return self._agents[agent_id]

    async def quarantine(self, agent_id: str, reason: str, operator: str) -> AgentView:
        self._record("quarantine", agent_id, reason, operator)
        view = self._known(agent_id)
        if not reason.strip():
            raise InputError("a quarantine needs a reason")
        self._agents[agent_id] = view = dataclasses.replace(view, trust_state="quarantined")
        return view

    async def release(self, agent_id: str, reason: str, operator: str) -> AgentView:
        self._record("release", agent_id, reason, operator)
        view = self._known(agent_id)
        if not reason.strip():
            raise InputError("a release needs a reason")
        self._agents[agent_id] = view = dataclasses.replace(view, trust_state="probation")
        return view

    # --- alerts: the engine's surface in memory, with engine.alerts' own rules for silences -----------
    def _active(self) -> list[Silence]:
        now = self.clock()
        return [s for s in self.silence_rows.values() if s.active(now)]

    def marked(self, row: AlertRow) -> AlertRow:
        silence = muting(row, self._active(), self.clock())
        return dataclasses.replace(row, silenced_by=silence.id if silence is not None else None)

    def raise_alerts(self, *rows: AlertRow) -> tuple[AlertRow, ...]:
        """What Engine._announce_alerts does after a question: recorded, marked, announced."""
        for row in rows:
            self.trust.tables.alert_rows[row.id] = row
        marked = tuple(self.marked(row) for row in rows)
        self.emit(AlertsRaised(marked, rows[0].trace_id, self.clock()))
        return marked

    async def alerts_list(self, open_only: bool = False, limit: int = 200) -> tuple[AlertRow, ...]:
        self._record("alerts_list", open_only, limit)
        return tuple(self.marked(row) for row in await self.trust.tables.alerts(open_only, limit))

    async def acknowledge_alert(self, alert_id: int | str, by: str, comment: str = "") -> AlertRow:
        self._record("acknowledge_alert", alert_id, by, comment)
        rows = self.trust.tables.alert_rows
        row = rows.get(int(alert_id))
        if row is None:
            raise InputError(f"no alert #{alert_id}")
        if row.open:
            row = rows[row.id] = dataclasses.replace(row, acknowledged_by=by, acknowledged_at=self.clock(),
                                                     ack_comment=comment)
        row = self.marked(row)
        self.emit(AlertChanged(row, self.clock()))
        return row

    def _newest_first(self, silences: Iterable[Silence]) -> tuple[Silence, ...]:
        return tuple(sorted(silences, key=lambda s: (-s.created_at, -s.id)))

    async def silences(self, active_only: bool = True) -> tuple[Silence, ...]:
        self._record("silences", active_only)
        return self._newest_first(self._active() if active_only else self.silence_rows.values())

    async def silence_alerts(self, kind, agent_id, duration_s, by, comment) -> Silence:
        self._record("silence_alerts", kind, agent_id, duration_s, by, comment)
        if agent_id:
            self._known(agent_id.strip())
        request = check_request(kind, agent_id, duration_s, by, comment)
        now = self.clock()
        silence = Silence(max(self.silence_rows, default=0) + 1, request.kind, request.agent_id, request.created_by,
                          request.comment, now, now + request.duration_s)
        self.silence_rows[silence.id] = silence
        self.emit(SilencesChanged(self._newest_first(self._active()), now))
        return silence

    async def end_silence(self, silence_id: int | str, by: str) -> Silence:
        self._record("end_silence", silence_id, by)
        silence = self.silence_rows.get(int(silence_id))
        now = self.clock()
        if silence is None:
            raise InputError(f"no silence #{silence_id}")
        if not silence.active(now):
            raise InputError(f"silence #{silence_id} has already ended")
        silence = self.silence_rows[silence.id] = dataclasses.replace(silence, ended_at=now, ended_by=by)
        self.emit(SilencesChanged(self._newest_first(self._active()), now))
        return silence

    # --- gateway and traces ------------------------------------------------------------------------
    async def gateway_decisions(self, limit: int = 200) -> tuple:
        self._record("gateway_decisions", limit)
        return self.decisions[:limit]

    async def trace(self, trace_id: str) -> tuple:
        self._record("trace", trace_id)
        return self.traces.get(trace_id, ())


@dataclass
class FakeSession:
    engine: FakeEngine
    service: EngineService
    errors: list[str] = field(default_factory=list)


def fake_service(qtbot, engine: FakeEngine | None = None, **engine_kwargs) -> FakeSession:
    """A started EngineService over a FakeEngine (needs the qasync_loop fixture). Errors it reports are
    collected in `errors`: a test that expects none asserts it is empty."""
    engine = engine or FakeEngine(**engine_kwargs)
    service = EngineService(engine)        # type: ignore[arg-type] - the engine surface the adapters use
    session = FakeSession(engine, service)
    service.sig_error.connect(session.errors.append)
    with qtbot.waitSignal(service.sig_ready, timeout=5_000):
        service.start()
    return session
