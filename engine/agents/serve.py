"""One built-in agent as its own process: `python -m engine.agents.serve --fleet F --agent ID`.

It builds its backend (index or generator), binds 127.0.0.1 (a free port unless the fleet file
fixes one) and prints one line `QUORUM-READY <port>` on stdout once it serves requests. The
launcher reads that line; everything else goes to stderr.
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import logging
import signal
import socket
import sys
from pathlib import Path

READY_PREFIX = "QUORUM-READY"


def _die_with_parent() -> None:
    """Linux: get SIGTERM when the launching process dies, so no agent is ever orphaned."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except OSError:
        pass


async def _serve(app, sock: socket.socket) -> None:
    import uvicorn
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.02)
    print(f"{READY_PREFIX} {sock.getsockname()[1]}", flush=True)
    await task


def main(argv: list[str] | None = None) -> int:
    from ..config import load_fleet
    from ..corpus import load_corpus
    from ..errors import QuorumError
    from ..types import Role
    from ..verify.verifier import build_verifier
    from .extractive import ExtractiveGenerator
    from .retrievers import build_retriever
    from .server import build_app

    parser = argparse.ArgumentParser(prog="engine.agents.serve")
    parser.add_argument("--fleet", required=True, type=Path)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--cache-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    _die_with_parent()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        fleet = load_fleet(args.fleet, corpus_dir=args.corpus)
        spec = fleet.agent(args.agent)
        corpus = load_corpus(fleet.corpus_dir)
        if spec.role is Role.RETRIEVER:
            backend = build_retriever(spec.backend, corpus, args.cache_dir)
        elif spec.role is Role.GENERATOR:
            backend = ExtractiveGenerator()
        else:
            backend = build_verifier(args.cache_dir, [c.text for c in corpus.chunks])
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", spec.port))
    except KeyError:
        print(f"agent {args.agent!r} is not in {args.fleet}", file=sys.stderr)
        return 2
    except (QuorumError, OSError) as exc:
        print(f"agent {args.agent}: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(build_app(spec, backend, len(corpus.chunks)), sock))
    return 0


if __name__ == "__main__":
    sys.exit(main())
