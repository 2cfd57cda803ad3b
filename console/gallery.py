"""`main.py screenshot DIR`: the main window and each panel with demo data, rendered offscreen to PNG files,
so anyone can see the console without a display.

It starts the real console (run_console) on the fleet (default config/fleet.toml) with a temporary database
and the first-start layout, asks a handful of the demo questions (their own tiers: high-risk ones reach the
approval queue; the default fleet's swapping generator is quarantined within them), writes a few agents'
memory entries and tool calls (the screenshot tool's DEMO SEEDING: the default fleet's generators rarely do
that on their own; never part of the product), then saves:

    DIR/window.png              the whole window, as it first opens
    DIR/<panel>.png             each panel's dock, brought to the front (fleet, questions, approvals, ...)
    DIR/dark/...                the same in the dark scheme, with --theme both or dark

Exit codes: 0 written, 1 the fleet did not start or a file could not be written, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from pathlib import Path

from engine import ExitCode

QUESTIONS = 8            # enough for the trust plot to move and an agent to be quarantined on the default fleet
SETTLE_S = 0.4           # for a panel's own reads (audit, memory, tools) to land after it is shown
THEMES = ("light", "dark", "both")
SEEDED_AGENTS = {"gen-alpha", "gen-beta", "gen-gamma"}    # whose memory and tool calls the seeding writes

log = logging.getLogger("console.gallery")


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("screenshot", help="render the window and every panel with demo data to PNG files")
    parser.add_argument("out_dir", type=Path, metavar="DIR", help="folder for the PNG files (created)")
    parser.add_argument("--questions", type=int, default=QUESTIONS, metavar="N",
                        help=f"demo questions asked first (default {QUESTIONS})")
    parser.add_argument("--theme", choices=THEMES, default="light", help="light (default), dark, or both")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the fleet, then each answer")
    parser.add_argument("--fleet", type=Path, default=argparse.SUPPRESS, help="fleet file (default: config/fleet.toml)")
    parser.add_argument("--settings", type=Path, default=argparse.SUPPRESS, help="engine settings file")
    return parser


def run(args) -> int:
    from engine import RiskTier, load_demo_questions, load_fleet, load_settings

    if args.questions < 0:
        print(f"--questions {args.questions}: expected 0 or more", file=sys.stderr)
        return ExitCode.BAD_INPUT
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")    # before QApplication exists

    from .app import run_console

    fleet = load_fleet(getattr(args, "fleet", None), corpus_dir=args.corpus.resolve() if getattr(args, "corpus", None) else None)
    settings = load_settings(getattr(args, "settings", None))
    questions = load_demo_questions()
    # A high-risk one first (the approval queue), then medium ones: those ask the whole fleet, so the liars
    # are caught and the trust plot moves; then the rest in file order.
    high = [q for q in questions if q.tier is RiskTier.HIGH][:1]
    rest = sorted((q for q in questions if q not in high), key=lambda q: q.tier is not RiskTier.MEDIUM)
    picked = high + rest[:max(args.questions - len(high), 0)]
    with tempfile.TemporaryDirectory(prefix="quorum-gallery-") as tmp:
        from .settings import use_scratch_settings      # the first-start layout, never the saved one
        use_scratch_settings(Path(tmp) / "settings")
        script = make_script(args.out_dir.resolve(), picked[:args.questions], args.theme, args.timeout)
        return run_console(fleet, settings, db_path=Path(tmp) / "quorum.db", script=script)


def make_script(out_dir: Path, questions, theme: str, timeout_s: float):
    from PySide6.QtWidgets import QApplication

    from . import style
    from .docks import PANELS
    from .screenshot import SHOT_SIZE, seed_demo
    from .service import Phase
    from .signals import first_emission

    async def settle(seconds: float = SETTLE_S) -> None:
        await asyncio.sleep(seconds)
        QApplication.processEvents()

    async def shoot(window, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        window.reset_layout()
        window.toast.hide()          # the pictures show the panels, not the last notification over them
        await settle()
        path = folder / "window.png"
        if not window.grab().save(str(path)):
            raise OSError(f"cannot write {path}")
        written.append(path)
        for spec in PANELS:
            if spec.id not in window.docks:
                continue
            window.show_panel(spec.id, focus=False)
            await settle()
            path = folder / f"{spec.id}.png"
            if not window.docks[spec.id].grab().save(str(path)):
                raise OSError(f"cannot write {path}")
            written.append(path)
        window.reset_layout()
        return written

    async def script(window, service) -> int:
        window.resize(SHOT_SIZE)
        while not service.ready:
            if service.phase is Phase.FAILED:
                log.error("the fleet did not start; no screenshots")
                return ExitCode.FAILURE
            await first_emission(service.sig_ready, service.sig_error, timeout_s=timeout_s)
        last_trace = ""
        for n, question in enumerate(questions, 1):
            print(f"question {n}/{len(questions)} ({question.tier.value}): {question.question}", flush=True)
            panel = window.ask_panel
            panel.question.setText(question.question)
            panel.tier.setCurrentText(question.tier.value)
            asked = []
            service.questions.sig_asked.connect(lambda trace, _q: asked.append(trace))
            panel.submit()
            await first_emission(service.questions.sig_finished, timeout_s=timeout_s)
            last_trace = asked[-1] if asked else last_trace
        if SEEDED_AGENTS <= {v.spec.id for v in service.fleet.agents()}:
            await seed_demo(service.engine, last_trace)      # DEMO SEEDING: see the module docstring
        else:
            log.info("not the demo fleet: Memory and Tools show what the agents did, nothing seeded")
        for load in (service.memory.load, service.tools.load, service.reviews.load, service.trust.load):
            load()
        await settle(1.0)
        written = []
        if theme in ("light", "both"):
            style.set_scheme(style.Scheme.LIGHT)
            written += await shoot(window, out_dir)
        if theme in ("dark", "both"):
            style.set_scheme(style.Scheme.DARK)
            written += await shoot(window, out_dir / "dark" if theme == "both" else out_dir)
        for path in written:
            print(path)
        return ExitCode.OK

    return script
