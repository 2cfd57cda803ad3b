"""One built-in agent as its own process: `python -m engine.agents.serve --fleet F --agent ID`.

It builds its backend (index or generator), binds its `host` (127.0.0.1 unless the fleet file says
otherwise and allows it with allow_non_loopback) on a free port unless the fleet file fixes one, and
prints one line `QUORUM-READY <port>` on stdout once it serves requests. The launcher reads that line;
everything else goes to stderr.

Its key (engine.agents.auth) comes in its environment (CHILD_KEY_ENV, never on the command line) and is
taken out of it at once; with tls_cert and tls_key it serves HTTPS.
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import ipaddress
import logging
import os
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


def take_key(environ=None) -> bytes | None:
    """The key the launcher handed over, removed from the environment so nothing started later inherits it."""
    from .auth import CHILD_KEY_ENV, parse_key
    environ = os.environ if environ is None else environ
    text = environ.pop(CHILD_KEY_ENV, None)
    return parse_key(text) if text else None


def bind_socket(host: str, port: int, allow_non_loopback: bool) -> socket.socket:
    """A listening socket on host:port; a non-loopback host only when the fleet file allows it."""
    from ..urls import is_loopback
    if not is_loopback(host) and not allow_non_loopback:
        raise OSError(f"refusing to bind {host}: not a loopback address and the fleet file does not set "
                      "allow_non_loopback = true")
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host.strip("[]")).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET      # a name (localhost): IPv4
    # proto IPPROTO_TCP: only then does asyncio set TCP_NODELAY on the connections it accepts. Without it a
    # reply sent as headers then body waits for the client's delayed ACK: about 40 ms a call on a kept-alive
    # connection, most of what a question spent waiting for its agents.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


async def _serve(app, sock: socket.socket, tls_cert: str = "", tls_key: str = "") -> None:
    import uvicorn
    # log_config None: uvicorn's own loggers go to the root handler (quoted lines), not to a formatter of its own.
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", log_config=None,
                            timeout_graceful_shutdown=2,
                            **({"ssl_certfile": tls_cert, "ssl_keyfile": tls_key} if tls_cert else {}))
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
    from ..ingest.corpus import load_corpus
    from ..errors import QuorumError
    from ..types import JUDGE_BACKEND, LLM_BACKEND, Role
    from ..untrusted import quoted_log_handler
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
    # Quoted log lines: a question or a passage with a line break in it cannot forge a line of the agent's log.
    logging.basicConfig(level=logging.WARNING, handlers=[quoted_log_handler(stream=sys.stderr)])
    try:
        key = take_key()
    except ValueError as exc:    # says what is wrong with it, never what it is
        print(f"agent {args.agent}: unusable key in its environment: {exc}", file=sys.stderr)
        return 2
    try:
        fleet = load_fleet(args.fleet, corpus_dir=args.corpus)
        spec = fleet.agent(args.agent)
        corpus = load_corpus(fleet.corpus_dir)
        if spec.role is Role.RETRIEVER:
            backend = build_retriever(spec.backend, corpus, args.cache_dir)
        elif spec.backend == LLM_BACKEND:
            from .llm_local import LocalLlmGenerator, model_path
            backend = LocalLlmGenerator(model_path(spec.model, fleet.path.parent))
        elif spec.role is Role.GENERATOR:
            backend = ExtractiveGenerator()
        elif spec.backend == JUDGE_BACKEND:
            from ..verify.judge import JudgeVerifier
            from ..verify.judge_model import judge_model_path
            from ..verify.judge_runtime import LocalJudgeModel
            backend = JudgeVerifier(LocalJudgeModel(judge_model_path(args.cache_dir)), name=spec.id)
        else:
            backend = build_verifier(args.cache_dir, [c.text for c in corpus.chunks])
        sock = bind_socket(spec.security.host, spec.port, fleet.allow_non_loopback)
    except KeyError:
        print(f"agent {args.agent!r} is not in {args.fleet}", file=sys.stderr)
        return 2
    except (QuorumError, OSError, RuntimeError, ValueError) as exc:   # RuntimeError: llm-local or llm-judge without its model
        print(f"agent {args.agent}: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(build_app(spec, backend, len(corpus.chunks), key=key), sock,
                       spec.security.tls_cert, spec.security.tls_key))
    return 0


if __name__ == "__main__":
    sys.exit(main())
