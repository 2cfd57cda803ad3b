"""What the engine's command-line modules share: the --db option and the exit code of an error.

Exit codes: 0 ok, 1 failure, 2 bad input (a bad argument, an unknown id, a broken config file: the
message names it). Every error is printed as one line, `error: …`, on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

from .errors import ConfigError, InputError, QuorumError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def add_db_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a copy on the sub-command never overwrites a --db given before it (main.py's convention).
    parser.add_argument("--db", type=Path, default=argparse.SUPPRESS,
                        help="SQLite file (default: user data dir, or $QUORUM_DB)")


def action_adder(actions) -> Callable[..., argparse.ArgumentParser]:
    """`action(name, help, change=False)`: a sub-command of `actions` (an add_subparsers result) with --db and
    --json, and --operator when it changes something (it is audited under that name)."""
    def action(name: str, help_: str, change: bool = False) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_)
        add_db_option(parser)
        parser.add_argument("--json", action="store_true", help="print JSON")
        if change:
            parser.add_argument("--operator", default=os.environ.get("USER") or "operator",
                                help="who does it (default: $USER, or \"operator\")")
        return parser
    return action


def reported(command: Callable[[], int]) -> int:
    """Runs a command: bad input exits 2, any other Quorum error 1, each said in one line on stderr."""
    try:
        return command()
    except (InputError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except QuorumError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
