"""Quorum: `python main.py` (console) | ask | fleet up | audit verify|list|export | review | agents | eval |
trace | memory | tools | gateway | alerts | store | llm | judge | index | screenshot | bench. Exit codes: engine/cli/exit_codes.py
(0 ok, 1 failure, 2 bad input)."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# Each command's module, in the order --help lists them: add_parser(sub) and run(args) -> int. The product's
# commands are engine.cli's; eval, gateway (the classifiers' training) and bench are the bench's,
# screenshot and bench ui the console's. Each is imported only when the full parser is built.
COMMAND_MODULES = {
    "ask": "engine.cli.ask",
    "fleet": "engine.cli.fleet",
    "review": "engine.cli.review",
    "agents": "engine.cli.reputation",
    "eval": "bench.evaluation.cli",
    "trace": "engine.cli.trace",
    "memory": "engine.cli.memory",
    "tools": "engine.cli.tools",
    "gateway": "bench.train.cli",
    "alerts": "engine.cli.alerts",
    "audit": "engine.cli.audit",
    "store": "engine.cli.store",
    "llm": "engine.cli.llm",
    "judge": "engine.cli.judge",
    "index": "engine.cli.index",
    "screenshot": "console.gallery",
    "bench": "bench.perf.cli",
}
BENCH_UI_MODULE = "console.bench_ui"     # `bench ui`: the console's responsiveness, beside bench's own kinds

COMMANDS = frozenset(COMMAND_MODULES)


def build_parser(commands: bool = True) -> argparse.ArgumentParser:
    """commands=False: the console's options alone. Building every command's parser imports every command's
    module, and the console's window waits on that (it must show within 2 s of start)."""
    from engine.cli.common import add_common_options
    parser = argparse.ArgumentParser(prog="quorum", description="Operations console for a fleet of RAG agents that may lie.")
    add_common_options(parser, top=True)
    parser.add_argument("--demo", type=float, metavar="RATE", default=None,
                        help="the console only: feed the demo questions at RATE a second once the fleet is ready "
                             "(0.05 to 20; the Demo traffic switch turns it off)")
    if not commands:
        parser.set_defaults(command=None)
        return parser
    sub = parser.add_subparsers(dest="command")
    for name, module in COMMAND_MODULES.items():
        added = importlib.import_module(module).add_parser(sub)
        if name == "bench":     # bench.perf.cli gives its kinds, for `ui` beside `soak` (Qt loads only when it runs)
            importlib.import_module(BENCH_UI_MODULE).add_ui_parser(added[1])
    return parser


def command_module(args: argparse.Namespace):
    if args.command == "bench" and getattr(args, "bench_kind", None) == "ui":
        return importlib.import_module(BENCH_UI_MODULE)
    return importlib.import_module(COMMAND_MODULES[args.command])


def pin_hash_seed() -> None:
    """Python salts set order per process, and a few ties in the evaluations follow it: with a fixed seed,
    running an evaluation again gives the same figures (the process starts again with PYTHONHASHSEED=0)."""
    if os.environ.get("PYTHONHASHSEED") is None:
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})


def wants_console(argv: list[str]) -> bool:
    """No command named (and no help asked): the console. A flag's value that happens to be a command's name
    only costs the full parser, which then sees it right."""
    return not any(a in COMMANDS or a in ("-h", "--help") for a in argv)


def guard_output() -> None:
    """Whatever a command prints or logs, no escape sequence reaches the terminal raw (TerminalStream) and a log
    line carries its message quoted: a line break in an agent's text cannot draw a line of its own."""
    import logging

    from engine.untrusted import QuotedFormatter, guard_terminal
    guard_terminal()
    if logging.lastResort is not None:      # the handler a command's warnings go to (no logging configured)
        logging.lastResort.setFormatter(QuotedFormatter())


def run_console(args: argparse.Namespace) -> int:
    from console.app import run_console as start
    from engine.cli.common import load_fleet_and_settings
    fleet, settings = load_fleet_and_settings(args)
    if args.demo is not None:
        from engine.demo import check_rate
        check_rate(args.demo)                  # a bad rate is bad input, before any window opens
    return start(fleet, settings, db_path=args.db, demo_rate=args.demo)


def main(argv: list[str] | None = None) -> int:
    guard_output()
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(commands=not wants_console(words)).parse_args(argv)
    from engine import ConfigError, InputError, QuorumError
    from engine.cli.exit_codes import ExitCode
    try:
        if args.command is None:
            return run_console(args)
        if args.command == "eval" and argv is None:
            pin_hash_seed()
        return command_module(args).run(args)
    except (ConfigError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except QuorumError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        return ExitCode.FAILURE


if __name__ == "__main__":
    sys.exit(main())
