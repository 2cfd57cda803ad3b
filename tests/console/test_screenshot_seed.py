"""The screenshot tool's demo seeding on a real engine (the default fleet and permission matrix on the small test
corpus, agents not launched): it writes memory and asks for tools as agents would, and every row it promises is there for the
panels to show. The seeding broke once when the engine's faces changed and nothing noticed."""
from __future__ import annotations

from pathlib import Path

from console.screenshot import seed_demo
from engine import Engine, EntryStatus, ToolStatus, load_fleet, load_settings

from ..conftest import FAST_SETTINGS, TEST_CORPUS

DEFAULT_FLEET = Path(__file__).resolve().parents[2] / "config" / "fleet.toml"


async def test_the_demo_seeding_leaves_what_the_memory_and_tool_panels_are_shown_with(db_path, cache_dir):
    engine = Engine(load_fleet(DEFAULT_FLEET, corpus_dir=TEST_CORPUS), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir,
                    launch=False)
    async with engine:
        chosen = await seed_demo(engine, "t-demo")
        calls = {c.id: c for c in await engine.tools.calls()}
        entries = {e.id: e for e in await engine.memory.entries(include_inactive=True)}
        outbox = await engine.tools.outbox()
        snapshots = await engine.memory.snapshots()

    statuses = sorted(c.status.value for c in calls.values())
    assert statuses == sorted(["done", "approved", "rejected", "pending", "pending", "refused", "refused", "failed"])
    assert calls[chosen["call"]].status is ToolStatus.PENDING
    assert [m.recipient for m in outbox] == ["ops@example.org"]     # only the approved mail went out
    refused = [c for c in calls.values() if c.status is ToolStatus.REFUSED]
    assert any("attacker.test" in c.why for c in refused)

    wrong = entries[chosen["entry"]]
    assert wrong.status is EntryStatus.QUARANTINED and "Nereid" in wrong.content
    rolled_back = [e for e in entries.values() if e.status is EntryStatus.ROLLED_BACK]
    assert [(e.namespace, e.content) for e in rolled_back] == [("gen-beta", "Distances in miles only.")]
    assert {s.namespace for s in snapshots} == {"gen-alpha", "gen-beta"}
