"""`main.py fleet up [--unsigned]`: run the built-in agents until Ctrl-C, each agent's state printed as it changes."""
from __future__ import annotations

import asyncio
import signal

from .common import add_common_options, load_fleet_and_settings
from .exit_codes import ExitCode


def add_parser(sub) -> None:
    fleet = sub.add_parser("fleet", help="run the built-in agents")
    fleet.add_argument("action", choices=["up"])
    fleet.add_argument("--unsigned", action="store_true",
                       help="run built-in agents without a configured key unsigned, so other clients on this machine "
                            "(curl, `agents check`) can call them; by default each has a new key for this run only")
    add_common_options(fleet)


def run(args) -> int:
    return asyncio.run(_fleet_up(args))


async def _fleet_up(args) -> int:
    from engine import AgentState, Engine
    from engine.untrusted import quoted
    fleet, settings = load_fleet_and_settings(args)

    from engine.events import AgentChanged

    def show(event) -> None:
        if isinstance(event, AgentChanged):
            view = event.view
            if view.state in (AgentState.UP, AgentState.DOWN):    # detail: the tail of the agent's own log
                print(f"{view.spec.id:<16} {view.state.value:<5} {quoted(view.url or view.detail)}", flush=True)

    engine = Engine(fleet, settings, db_path=args.db, per_run_keys=not args.unsigned)
    engine.subscribe(show)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with engine:
        keyed = sorted(a.id for a in fleet.agents if a.builtin and a.enabled and a.id in engine.parts.keyring)
        if keyed:
            print(f"Signed with keys for this run only (other clients get 401; --unsigned serves them without): "
                  f"{', '.join(keyed)}", flush=True)
        print("Fleet is up; Ctrl-C stops it.", flush=True)
        await stop.wait()
    print("Fleet stopped.")
    return ExitCode.OK
