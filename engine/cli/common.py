"""What the command modules share: the options every command takes, the --db option, the operator's name, the
fleet and settings a command loads, and the exit code of an error (exit_codes.ExitCode).

Every error is printed as one line, `error: …`, on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

from engine.errors import ConfigError, InputError, QuorumError

from .exit_codes import ExitCode

DB_HELP = "SQLite file or postgresql://role@host/db URL (default: user data dir, or $QUORUM_DB)"


def add_common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Options every command takes, before or after its name: a subcommand's copy never overwrites a
    value given before the subcommand (`main.py --settings S agents`)."""
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--fleet", type=Path, default=default, help="fleet file (default: config/fleet.toml)")
    parser.add_argument("--settings", type=Path, default=default,
                        help="engine settings file (default: config/engine.toml)")
    parser.add_argument("--corpus", type=Path, default=default,
                        help="folder of your own .md, .txt, .html and .pdf files the built-in agents read")
    parser.add_argument("--db", type=str, default=default, help=DB_HELP)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a copy on the sub-command never overwrites a --db given before it (main.py's convention).
    parser.add_argument("--db", type=str, default=argparse.SUPPRESS, help=DB_HELP)


def store_of(args: argparse.Namespace):
    """The store a command reads: --db, else $QUORUM_DB, else the settings' [store] url, else the desk's own file.
    On a team store the command's --operator becomes the signed-in role (the audit's actor)."""
    from engine.engine import default_store
    from engine.store.target import store_target
    if getattr(args, "db", None):
        target = store_target(args.db)
    elif os.environ.get("QUORUM_DB"):
        target = default_store()
    else:
        from engine import load_settings
        target = default_store(load_settings(getattr(args, "settings", None)).store.url)
    if target.shared and hasattr(args, "operator"):
        args.operator = target.role     # on a team store, whoever acts is the role signed in, not a name typed
    return target


def default_operator() -> str:
    return os.environ.get("USER") or "operator"


def action_adder(actions) -> Callable[..., argparse.ArgumentParser]:
    """`action(name, help, change=False)`: a sub-command of `actions` (an add_subparsers result) with --db and
    --json, and --operator when it changes something (it is audited under that name)."""
    def action(name: str, help_: str, change: bool = False) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_)
        add_db_option(parser)
        parser.add_argument("--json", action="store_true", help="print JSON")
        if change:
            parser.add_argument("--operator", default=default_operator(),
                                help="who does it (default: $USER, or \"operator\")")
        return parser
    return action


def load_fleet_and_settings(args: argparse.Namespace):
    """The fleet file (with --corpus for the built-in agents) and the engine settings a command runs on."""
    from engine import load_fleet, load_settings
    fleet = load_fleet(args.fleet, corpus_dir=args.corpus.resolve() if args.corpus else None)
    return fleet, load_settings(args.settings)


def reported(command: Callable[[], int]) -> int:
    """Runs a command: bad input exits 2, any other Quorum error 1, each said in one line on stderr."""
    try:
        return command()
    except (InputError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except QuorumError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILURE


def cli_book_names(fleet, store):
    """The reputation book's names for this desk's fleet, as its engine gives them (engine.reputation.identity):
    identities on a team store, read with the fleet's configured keys."""
    from engine.agents.auth import Keyring
    from engine.reputation.identity import book_names
    keyring = Keyring()
    if store.target.shared:
        keyring.load(fleet)
    return book_names(fleet.agents, keyring.get, store.target.shared)
