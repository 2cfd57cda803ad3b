"""One desk of `bench team`: `python -m bench.perf.team_desk --desk N --desks D --db URL --fleet F --out FILE`.

An Engine on the given store with a scripted operator at it. It starts, prints `QUORUM-TEAM-DESK-READY {...}` on
stdout and waits for one line on stdin, `go {"start", "ask_until", "decide_until", "watch_until"}` (times from
time.time(); every desk gets the same). Then, until ask_until, it asks the demo questions at --rate (every
--high-every-th on the high tier, the rest on the low tier: the fast path); until decide_until its operator claims
and decides what waits in the queue, items from any desk; until watch_until it goes on reading the decisions
other desks make. It writes what it did and saw to --out as JSON lines (bench.perf.team_figures says which), and
times every write transaction of its store.

The operator decides under a name of its own (bench-desk-N), not the role the desk signed in as: every desk signs
in as one role, and a team store lets nobody approve an answer to a question they asked. Each desk takes the
items whose id falls to it (id mod desks) and any item that waited TAKEOVER_S: items from every desk are decided,
and the desks rarely reach for the same one.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

READY_PREFIX = "QUORUM-TEAM-DESK-READY"
TAKEOVER_S = 3.0          # an item nobody decided this long is anyone's
QUEUE_POLL_S = 1.0        # the operator looks at the queue at least this often, news or not
SEEN_WINDOW_S = 120.0     # decisions read back are those of the last two minutes (a later sighting is "never")


class Lines:
    """The desk's JSON lines, written whole and flushed (the parent reads them while the desk runs), from the
    loop and from the store's thread."""

    def __init__(self, path: Path, desk: int) -> None:
        self.desk = desk
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, "desk": self.desk, "at": fields.pop("at", time.time()), **fields},
                          separators=(",", ":"))
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def write_kind(fn: Callable) -> str:
    """A transaction's name, from the function it runs: 'record_answer_sync', 'ReviewQueue._decide_sync'."""
    return getattr(fn, "__qualname__", type(fn).__name__).split(".<locals>")[0]


def time_transactions(store, lines: Lines, recording: threading.Event) -> None:
    """Wraps the store's one transaction path (Store._transaction: every write, BEGIN to COMMIT, on the store's
    thread) so each is timed, without touching the engine's code. Only while `recording` is set."""
    inner = store._transaction

    def timed(fn):
        started = time.perf_counter()
        ok = False
        try:
            result = inner(fn)
            ok = True
            return result
        finally:
            if recording.is_set():
                lines.write("write", what=write_kind(fn), ms=round((time.perf_counter() - started) * 1000, 3), ok=ok)
    store._transaction = timed


@dataclasses.dataclass(frozen=True)
class Plan:
    start: float
    ask_until: float
    decide_until: float
    watch_until: float


class DecisionWatch:
    """Reads, after each StoreChanged that touches the queue, which items other desks decided; writes a `seen`
    line for each the first time (the read is a narrow one on the store's thread, behind this desk's own
    writes, as any read of a desk's is)."""

    def __init__(self, engine, lines: Lines, operator: str) -> None:
        self.engine, self.lines, self.operator = engine, lines, operator
        self._seen: set[int] = set()
        self._reading: asyncio.Task | None = None
        self._again = False
        self._told_at = 0.0
        self.watching = False

    def told(self, at: float) -> None:
        if not self.watching:
            return
        if self._reading is not None and not self._reading.done():
            self._again = True      # read once more when this read is over: it may have missed this commit
            return
        self._told_at = at
        self._reading = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        while True:
            self._again, told_at = False, self._told_at
            store = self.engine.parts.store
            try:
                rows = await store.call(self._decided_sync, store)
            except Exception as exc:       # noqa: BLE001 - a failed read is said in the log; the next one retries
                logging.getLogger(__name__).warning("decisions not read: %s", exc)
                rows = []
            now = time.time()
            for item, decided_by in rows:
                if item not in self._seen and decided_by != self.operator:
                    self._seen.add(item)
                    self.lines.write("seen", item=item, decided_by=decided_by, at=now, told_at=told_at)
            if not self._again:
                return
            self._told_at = time.time()

    @staticmethod
    def _decided_sync(store) -> list[tuple[int, str]]:
        return [(int(r[0]), str(r[1])) for r in store.execute(
            "SELECT id, decided_by FROM approvals WHERE status <> 'pending' AND decided_at > ?",
            [store.clock() - SEEN_WINDOW_S])]

    async def aclose(self) -> None:
        self.watching = False
        if self._reading is not None:
            await asyncio.gather(self._reading, return_exceptions=True)


class ScriptedOperator:
    """Claims and decides what waits in the queue: approves an answer the fleet gave, rejects an abstention
    or no answer ("insufficient evidence")."""

    def __init__(self, engine, lines: Lines, name: str, desk: int, desks: int) -> None:
        self.engine, self.lines, self.name = engine, lines, name
        self.desk, self.desks = desk, desks
        self.wake = asyncio.Event()

    def mine(self, item, now: float) -> bool:
        if item.holder(now) not in ("", self.name):
            return False
        return item.id % self.desks == self.desk - 1 or now - item.created_at >= TAKEOVER_S

    async def run(self, until: float) -> None:
        while time.time() < until:
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=min(QUEUE_POLL_S, max(0.0, until - time.time())))
            except TimeoutError:
                pass
            self.wake.clear()
            for item in await self.engine.reviews.pending():
                if time.time() >= until:
                    return
                if self.mine(item, self.engine.parts.store.clock()):
                    await self.decide(item)

    async def decide(self, item) -> None:
        from engine import APPROVE_REASONS, REJECT_REASONS, InputError, Verdict
        try:
            await self.engine.reviews.claim(item.id, self.name)
        except InputError as refused:       # another desk claimed or decided it first
            self.lines.write("refused", item=item.id, step="claim", why=str(refused))
            return
        approve = item.verdict is Verdict.ANSWERED
        reason = APPROVE_REASONS[0] if approve else REJECT_REASONS[1]
        started = time.perf_counter()
        try:
            decided = await self.engine.reviews.decide(item.id, approve, self.name, reason)
        except InputError as refused:
            self.lines.write("refused", item=item.id, step="decide", why=str(refused))
            return
        self.lines.write("decided", item=item.id, approve=approve, operator=self.name, status=decided.status.value,
                         decided_at=decided.decided_at, ms=round((time.perf_counter() - started) * 1000, 1))


def tiered_ask(engine, lines: Lines, high_every: int):
    """The demo traffic's ask: every high_every-th question on the high tier, the others on the low tier; each
    answer written as acknowledged (Engine.ask returns once its record and queue item are committed)."""
    from engine import RiskTier
    asked = 0

    async def ask(question: str, _own_tier) -> object:
        nonlocal asked
        asked += 1
        tier = RiskTier.HIGH if high_every and asked % high_every == 0 else RiskTier.LOW
        started = time.perf_counter()
        try:
            answer = await engine.questions.ask(question, tier)
        except Exception as exc:
            lines.write("failed", tier=tier.value, error=f"{type(exc).__name__}: {exc}"[:300])
            raise
        lines.write("answered", trace_id=answer.trace_id, tier=tier.value, verdict=answer.verdict.value,
                    ms=round((time.perf_counter() - started) * 1000, 1))
        return answer
    return ask


def rotated_questions(desk: int, desks: int):
    """The demo questions, each desk starting at its own place, so desks rarely ask one question at once."""
    from engine.demo import load_demo_questions
    questions = load_demo_questions()
    start = (desk - 1) * len(questions) // max(desks, 1)
    return questions[start:] + questions[:start]


def desk_settings(path: Path | None):
    """The engine's settings (config/engine.toml unless --settings), with one approval deciding a high-risk item
    ([review] quorum_high = 1): each decision is then one event whose way to the other desks is measured."""
    from engine import load_settings
    settings = load_settings(path)
    return dataclasses.replace(settings, review=dataclasses.replace(settings.review, quorum_high=1))


async def read_plan() -> Plan:
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if not line.startswith("go "):
        raise SystemExit(f"team desk: expected 'go {{...}}' on stdin, got {line.strip()[:80]!r}")
    return Plan(**json.loads(line[3:]))


async def sleep_until(at: float) -> None:
    await asyncio.sleep(max(0.0, at - time.time()))


async def run_desk(args: argparse.Namespace) -> int:
    from engine import Engine, ReviewEnqueued, StoreChanged, load_fleet
    from engine.demo import DemoTraffic
    from engine.engine import default_cache_dir
    lines = Lines(args.out, args.desk)
    operator_name = f"bench-desk-{args.desk}"
    engine = Engine(load_fleet(args.fleet), desk_settings(args.settings), db_path=args.db,
                    cache_dir=default_cache_dir())
    recording = threading.Event()
    time_transactions(engine.parts.store, lines, recording)
    watch = DecisionWatch(engine, lines, operator_name)
    operator = ScriptedOperator(engine, lines, operator_name, args.desk, args.desks)

    def on_event(event: object) -> None:
        if isinstance(event, StoreChanged) and event.touches("approvals"):
            watch.told(time.time())
            operator.wake.set()
        elif isinstance(event, ReviewEnqueued):
            operator.wake.set()
    engine.subscribe(on_event)
    async with engine:
        lines.write("ready", operator=operator_name, signed_in=engine.signed_in or "")
        print(f"{READY_PREFIX} {json.dumps({'desk': args.desk})}", flush=True)
        plan = await read_plan()
        await sleep_until(plan.start)
        recording.set()
        watch.watching = True
        traffic = DemoTraffic(tiered_ask(engine, lines, args.high_every), lambda event: None,
                              questions=rotated_questions(args.desk, args.desks), rate=args.rate)
        traffic.start()
        deciding = asyncio.get_running_loop().create_task(operator.run(plan.decide_until))
        await sleep_until(plan.ask_until)
        await traffic.aclose()        # the questions in flight are answered
        await deciding
        await sleep_until(plan.watch_until)
        await watch.aclose()
        stats = traffic.stats()
        lines.write("done", asked=stats.asked, answered=stats.answered, failed=stats.failed, skipped=stats.skipped,
                    pending=len(await engine.reviews.pending()))
        recording.clear()
    lines.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    from engine.agents.serve import _die_with_parent
    from engine.untrusted import quoted_log_handler
    parser = argparse.ArgumentParser(prog="bench.perf.team_desk")
    parser.add_argument("--desk", type=int, required=True, help="this desk's number, from 1")
    parser.add_argument("--desks", type=int, required=True, help="desks in the run")
    parser.add_argument("--db", required=True, help="the store: a postgresql:// URL or a SQLite file")
    parser.add_argument("--fleet", type=Path, required=True)
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--out", type=Path, required=True, help="the desk's JSON lines")
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--high-every", type=int, default=5)
    args = parser.parse_args(argv)
    _die_with_parent()
    logging.basicConfig(level=logging.WARNING, handlers=[quoted_log_handler(stream=sys.stderr)])
    return asyncio.run(run_desk(args))


if __name__ == "__main__":
    sys.exit(main())
