"""Screenshot of the console as an operator sees it, taken offscreen:

    python -m console.screenshot OUT.png [--fleet F] [--corpus DIR] [--question Q] [--tier T] [--tab NAME]
                                         [--panel fleet|approvals|trust|alerts|cascade] [--repeat N]
                                         [--select AGENT]

Starts the real console (run_console), waits for the fleet, asks the question (--repeat times, so the
trust plot has a history), waits for each answer, opens the evidence tab named by --tab (e.g.
"context", "generators"; a top panel's name, e.g. "trust", "alerts" or "cascade", works too) and the top panel
named by --panel (with --panel approvals, the question's review item is selected if it has one),
selects --select's agent (its fleet row, its trust line), saves `window.grab()` and closes the
window through the normal shutdown path.
The database goes to a temporary folder unless --db is given; the embedding cache is the usual one.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

DEFAULT_QUESTION = "What are the moons of Mars?"
TOP_PANELS = ["fleet", "approvals", "trust", "alerts", "cascade"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m console.screenshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="PNG file to write")
    parser.add_argument("--fleet", type=Path, help="fleet file (default: config/fleet.toml)")
    parser.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    parser.add_argument("--corpus", type=Path, help="folder of .md/.txt files for the built-in retrievers")
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--tier", choices=["auto", "low", "medium", "high"], default="auto")
    parser.add_argument("--db", type=Path, help="SQLite file (default: a temporary one)")
    parser.add_argument("--cache-dir", type=Path, help="agents' cache folder (default: the user cache dir)")
    parser.add_argument("--tab", help="evidence tab to show, by the start of its name (case-insensitive): "
                                         "citations, context, generators or agents (default: the one the answer "
                                         "opens); or a top panel: fleet, approvals, trust, alerts or cascade")
    parser.add_argument("--panel", choices=TOP_PANELS, default="fleet",
                        help="top panel to show: the fleet table, the approval queue, the trust plot, the "
                             "alerts or the cascade monitor's stage scores (default: fleet)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="ask the question N times before the screenshot (the demo fleet's gen-gamma is "
                             "quarantined after about 7)")
    parser.add_argument("--select", metavar="AGENT", help="agent to select (fleet row and trust line)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the fleet, then the answer")
    return parser


def find_tab(names: list[str], wanted: str) -> int:
    """Position of the tab whose name starts with `wanted` (case-insensitive), or -1."""
    wanted = wanted.strip().lower()
    return next((i for i, name in enumerate(names) if name.lower().startswith(wanted)), -1)


def make_script(out: Path, question: str, tier: str, timeout_s: float, tab: int | None = None,
                top_panel: str = "fleet", repeat: int = 1, select: str | None = None):
    from .signals import first_emission
    from .service import Phase

    async def script(window, service) -> int:
        log = logging.getLogger("console.screenshot")
        while not service.ready:
            if service.phase is Phase.FAILED:
                log.error("the fleet did not start; no screenshot")
                return 1
            await first_emission(service.sig_ready, service.sig_error, timeout_s=timeout_s)
        panel = window.ask_panel
        answers = []
        service.sig_answer.connect(answers.append)
        for n in range(max(repeat, 1)):
            panel.question.setText(question)
            panel.tier.setCurrentText(tier)
            panel.submit()
            _, (ok,) = await first_emission(service.sig_question_finished, timeout_s=timeout_s)
            if not ok:
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
        elif top_panel == "approvals":
            window.show_approvals()
            if answers:
                item = next((i for i in window.approvals_panel.model.records() if i.trace_id == answers[-1].trace_id),
                            None)
                if item is not None:
                    window.approvals_panel.select_item(item.id)
        out.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(out)):
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
        db_path = args.db or Path(tmp) / "quorum.db"
        script = make_script(args.out.resolve(), args.question, args.tier, args.timeout, tab, panel, args.repeat,
                             args.select)
        return run_console(fleet, settings, db_path=db_path, cache_dir=args.cache_dir, script=script)


if __name__ == "__main__":
    sys.exit(main())
