"""`main.py bench` (naive RAG beside the fast, standard and high paths), `main.py bench soak` and `bench team`.

    main.py bench [--questions N] [--rounds R] [--concurrency C] [--json PATH] [--fleet F] [--settings S]
    main.py bench soak [--agents 50] [--rate 10] [--minutes 10] [--json PATH]
    main.py bench team [--desks 3] [--rate 1] [--minutes 5] [--db URL] [--write-minutes 1] [--json PATH]

`bench ui` (the console's responsiveness) is console.bench_ui's; main.py adds it beside these.
"""
from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
import time
from pathlib import Path

from engine.cli.exit_codes import ExitCode
from engine.config import PROJECT_ROOT

DEFAULT_JSON = PROJECT_ROOT / "reports" / "bench" / "bench.json"
DEFAULT_SOAK_JSON = PROJECT_ROOT / "reports" / "bench" / "soak.json"
DEFAULT_TEAM_JSON = PROJECT_ROOT / "reports" / "bench" / "team.json"
DEMO_QUESTIONS = PROJECT_ROOT / "resources" / "demo_questions.jsonl"


def add_parser(subparsers) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The bench parser (its own options: the paths bench) and its sub-commands, for main.py to add `ui` to."""
    bench = subparsers.add_parser(
        "bench", help="benchmarks: naive RAG beside Quorum's fast, standard and high paths (latency per question "
                      "and stage, overhead, questions/s, cache hits, memory); `bench soak`; `bench team`; "
                      "`bench ui`")
    bench.add_argument("--questions", type=Path, default=DEMO_QUESTIONS, metavar="FILE",
                       help="JSON Lines of {id, question, answers} (default: the demo questions)")
    bench.add_argument("--limit", type=int, default=None, help="use the first N questions")
    bench.add_argument("--rounds", type=int, default=1, help="times each question is asked on every path (default 1)")
    bench.add_argument("--concurrency", type=int, default=4, help="questions at once in the saturation run (default 4)")
    bench.add_argument("--cache-dir", type=Path, default=None,
                       help="agents' and embeddings' cache (default: the user cache dir, as `make run` uses: the "
                            "corpus is embedded once; what agents return that the corpus does not hold is not)")
    bench.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH", dest="bench_json",
                       help=f"the JSON (default {DEFAULT_JSON.relative_to(PROJECT_ROOT)}); .md and .svg beside it")
    for flag, what in (("--fleet", "fleet file (default: config/fleet.toml)"),
                       ("--settings", "engine settings file (default: config/engine.toml)"),
                       ("--corpus", "folder of .md/.txt files the built-in retrievers index")):
        bench.add_argument(flag, type=Path, default=argparse.SUPPRESS, help=what)
    kinds = bench.add_subparsers(dest="bench_kind", metavar="{soak,team,ui}")
    from .soak import add_soak_parser
    from .team import add_team_parser
    add_soak_parser(kinds, DEFAULT_SOAK_JSON)
    add_team_parser(kinds, DEFAULT_TEAM_JSON)
    return bench, kinds


def run(args: argparse.Namespace) -> int:
    from engine.errors import QuorumError
    if getattr(args, "bench_kind", None) == "soak":
        from .soak import run_soak
        return run_soak(args)
    if getattr(args, "bench_kind", None) == "team":
        from .team import run_team
        return run_team(args)
    try:
        if args.rounds < 1 or args.concurrency < 1:
            raise ValueError("--rounds and --concurrency must be at least 1")
        return asyncio.run(_paths(args))
    except (QuorumError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT


async def _paths(args) -> int:
    from engine import Engine, load_fleet, load_settings
    from engine.engine import default_cache_dir
    from .paths import load_questions, run_paths
    from .report import write_json, write_paths_report
    questions = load_questions(args.questions, args.limit)
    corpus = getattr(args, "corpus", None)
    fleet = load_fleet(getattr(args, "fleet", None), corpus_dir=corpus.resolve() if corpus else None)
    settings = load_settings(getattr(args, "settings", None))
    with tempfile.TemporaryDirectory(prefix="quorum-bench-") as tmp:
        cache_dir = args.cache_dir or default_cache_dir()
        started = time.perf_counter()
        print(f"bench: starting the fleet of {fleet.path} (a fresh database in {tmp})", flush=True)
        async with Engine(fleet, settings, db_path=Path(tmp) / "bench.db", cache_dir=cache_dir) as engine:
            print(f"bench: fleet up in {time.perf_counter() - started:.1f} s; {len(questions)} questions × "
                  f"{args.rounds} rounds on naive, fast, standard and high", flush=True)
            result = await run_paths(engine, questions, rounds=args.rounds, concurrency=args.concurrency,
                                     progress=lambda line: print(line, flush=True))
    command = "python main.py " + (" ".join(shlex.quote(a) for a in sys.argv[1:]) or "bench")
    path = write_json(args.bench_json, result)
    md, svg = write_paths_report(path, result, command)
    print()
    print(md.read_text(encoding="utf-8"))
    print(f"wrote {path}, {md.name} and {svg.name}")
    return ExitCode.OK
