"""The engine under load in its own process, for tests/engine/test_durability.py to kill with SIGKILL.

`python tests/engine/durability_driver.py FLEET SETTINGS STORE CACHE` starts the engine (main.py's headless
path: Engine on a fleet of real agent processes) on STORE, a SQLite file or a postgresql:// URL, then runs at
once: questions two at a time (high-risk ones wait in the approval queue), review decisions on the pending
items, quarantine and release of one agent, and acknowledgements of open alerts. After each awaited write
returns it prints one JSON line, "acknowledged": what was written and the audit chain's head (seq, hash) as
this process then read it from the store. It stops by itself after MAX_SECONDS; the test kills it long before.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import Engine, RiskTier, load_fleet, load_settings  # noqa: E402
from engine.errors import InputError  # noqa: E402

MAX_SECONDS = 60.0
QUESTIONS = (("What are the moons of Mars?", RiskTier.HIGH), ("Who discovered the moons of Mars?", RiskTier.MEDIUM),
             ("What is the largest moon of Saturn?", RiskTier.HIGH), ("How long is a day on Venus?", RiskTier.MEDIUM))


def say(kind: str, **fields) -> None:
    print(json.dumps({"ack": kind, **fields}), flush=True)


async def head(engine: Engine) -> dict:
    """The audit chain's last event and the score history's last row, read back after the write returned."""
    store = engine.parts.store

    def read() -> dict:
        [audit] = store.query("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
        trust = store.query("SELECT id, agent_id, score, state FROM trust_history ORDER BY id DESC LIMIT 1")
        return {"audit_seq": audit["seq"], "audit_hash": audit["hash"],
                "trust_row": [trust[0][k] for k in ("id", "agent_id", "score", "state")] if trust else None}
    return await store.call(read)


async def ask_forever(engine: Engine, lane: int, stop: float) -> None:
    n = lane
    while time.monotonic() < stop:
        question, tier = QUESTIONS[n % len(QUESTIONS)]
        answer = await engine.questions.ask(question, tier)
        item = await engine.reviews.item_for(answer.trace_id)
        say("question", trace_id=answer.trace_id, review_item=item.id if item else None,
            **await head(engine))
        n += 2


async def decide_forever(engine: Engine, stop: float) -> None:
    approve = True
    while time.monotonic() < stop:
        pending = await engine.parts.review.pending()
        if not pending:
            await asyncio.sleep(0.02)
            continue
        item = pending[0]
        try:
            decided = await engine.reviews.decide(item.id, approve, "alice", "verified against the cited sources" if approve
                                          else "insufficient evidence")
        except InputError:
            continue
        # On a team store a high-risk item needs two approvers: alice's approval is counted and the item still
        # waits (status "pending") until her rejection, or another's approval, decides it.
        say("decision", item=decided.id, trace_id=decided.trace_id, status=decided.status.value,
            **await head(engine))
        approve = not approve


async def quarantine_forever(engine: Engine, stop: float) -> None:
    quarantined = False
    while time.monotonic() < stop:
        await asyncio.sleep(0.2)
        if quarantined:
            await engine.reputation.release("gen-b", "repaired", "bob")
        else:
            await engine.reputation.quarantine("gen-b", "drill", "bob")
        quarantined = not quarantined
        say("quarantine" if quarantined else "release", agent="gen-b", **await head(engine))


async def acknowledge_forever(engine: Engine, stop: float) -> None:
    while time.monotonic() < stop:
        open_alerts = await engine.alerts.alerts(open_only=True, limit=50)
        if not open_alerts:
            await asyncio.sleep(0.05)
            continue
        row = await engine.alerts.acknowledge(open_alerts[-1].id, "carol", "seen in the drill")
        say("alert", alert=row.id, by=row.acknowledged_by, **await head(engine))


async def main(fleet: Path, settings: Path, store: str, cache: Path) -> None:
    engine = Engine(load_fleet(fleet), load_settings(settings), db_path=store, cache_dir=cache)   # a file or a URL
    async with engine:
        print(json.dumps({"ready": True, "pids": {a: engine.parts.launcher.pid(a) for a in engine.parts.launcher.urls()}}),
              flush=True)
        stop = time.monotonic() + MAX_SECONDS
        await asyncio.gather(ask_forever(engine, 0, stop), ask_forever(engine, 1, stop), decide_forever(engine, stop),
                             quarantine_forever(engine, stop), acknowledge_forever(engine, stop))


if __name__ == "__main__":
    fleet_file, settings_file, store_arg, cache_dir = sys.argv[1:5]
    asyncio.run(main(Path(fleet_file), Path(settings_file), store_arg, Path(cache_dir)))
