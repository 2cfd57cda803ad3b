"""Many built-in agents in one process, for the soak: `python -m bench.perf.soak_agents --fleet F --corpus DIR`.

Every agent of the fleet file (built-in form: role and backend) is the real agent app (engine.agents.server,
the protocol's checks, faults and all) on its own port of 127.0.0.1, all on one event loop; agents of one
backend share one index, so fifty agents cost a few indexes, not fifty. Prints one line
`QUORUM-SOAK-READY {"agent id": port, ...}` once every agent serves, and serves until killed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

READY_PREFIX = "QUORUM-SOAK-READY"


async def serve_all(apps: dict[str, object]) -> None:
    import uvicorn

    from engine.agents.serve import bind_socket
    servers, sockets, ports = [], [], {}
    for agent_id, app in apps.items():
        sock = bind_socket("127.0.0.1", 0, allow_non_loopback=False)
        ports[agent_id] = sock.getsockname()[1]
        sockets.append(sock)
        servers.append(uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                                     log_config=None, timeout_graceful_shutdown=1)))
    tasks = [asyncio.create_task(s.serve(sockets=[sock])) for s, sock in zip(servers, sockets)]
    while not all(s.started for s in servers):
        for task in tasks:
            if task.done():
                await task        # a server that failed to start: its error ends the process
        await asyncio.sleep(0.05)
    print(f"{READY_PREFIX} {json.dumps(ports)}", flush=True)
    await asyncio.gather(*tasks)


def main(argv: list[str] | None = None) -> int:
    from engine.agents.extractive import ExtractiveGenerator
    from engine.agents.retrievers import build_retriever
    from engine.agents.serve import _die_with_parent
    from engine.agents.server import build_app
    from engine.config import load_fleet
    from engine.ingest.corpus import load_corpus
    from engine.types import Role
    from engine.untrusted import quoted_log_handler

    parser = argparse.ArgumentParser(prog="bench.perf.soak_agents")
    parser.add_argument("--fleet", required=True, type=Path)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--cache-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    _die_with_parent()
    logging.basicConfig(level=logging.WARNING, handlers=[quoted_log_handler(stream=sys.stderr)])
    fleet = load_fleet(args.fleet, corpus_dir=args.corpus)
    corpus = load_corpus(fleet.corpus_dir)
    backends: dict[str, object] = {}
    apps = {}
    for spec in fleet.agents:
        if spec.role is Role.RETRIEVER:
            if spec.backend not in backends:
                backends[spec.backend] = build_retriever(spec.backend, corpus, args.cache_dir)
            backend = backends[spec.backend]
        elif spec.role is Role.GENERATOR:
            backend = ExtractiveGenerator()
        else:
            print(f"{spec.id}: the soak host serves retrievers and generators only", file=sys.stderr)
            return 2
        apps[spec.id] = build_app(spec, backend, len(corpus.chunks))
    asyncio.run(serve_all(apps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
