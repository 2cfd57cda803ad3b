"""`main.py judge check [--question Q --passage P --candidate A ...]`: is the LLM judge ready?

Joins and checks the model (engine/verify/judge_model.py), loads it in-process (xllamacpp), and asks it its
canaries (engine/generation/canaries.py): each known question's answer against a true sentence that does not
answer, and a claim against the same claim with two names exchanged; or, with --question, reads the given
candidates against the given passage. Prints each P(yes) and how long each reading took. Exit codes: 0 ready
(the canaries read right), 1 the judge misread a canary, 2 xllamacpp or a part package is missing, or the parts
do not join to the pinned file (the message says which and how).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from engine.untrusted import quoted

from .exit_codes import ExitCode


def add_parser(sub) -> None:
    judge = sub.add_parser("judge", help="the LLM judge (a verifier agent, backend llm-judge): check that it is "
                                         "installed and reads its canaries right")
    actions = judge.add_subparsers(dest="judge_action", required=True, metavar="{check}")
    check = actions.add_parser("check", help="join and check the model, load it, and ask it its canaries")
    check.add_argument("--question", help="read --candidate answers to this question against --passage")
    check.add_argument("--passage", action="append", default=[], help="a passage (repeat for several)")
    check.add_argument("--candidate", action="append", default=[], help="a candidate answer (repeat for several)")
    check.add_argument("--cache-dir", type=Path, help="where the joined model is kept (default: Quorum's cache)")


def run(args) -> int:
    from engine.config import EngineSettings
    from engine.engine import default_cache_dir
    from engine.generation.canaries import CANARIES, CLAIM_CANARIES, check_readings
    from engine.types import Chunk, ClaimLabel
    from engine.verify.judge import JudgeVerifier
    from engine.verify.judge_model import JudgeModelCorrupt, JudgeModelMissing, judge_model_path
    from engine.verify.judge_runtime import JudgeModelFailed, LocalJudgeModel
    if args.question is not None and not (args.passage and args.candidate):
        print("error: --question needs at least one --passage and one --candidate", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        started = time.perf_counter()
        path = judge_model_path(args.cache_dir or default_cache_dir())
        checked_s = time.perf_counter() - started
        started = time.perf_counter()
        judge = JudgeVerifier(LocalJudgeModel(path), name="judge check")
    except (JudgeModelMissing, JudgeModelCorrupt) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except (ValueError, RuntimeError) as exc:          # llama.cpp could not load the file
        print(f"error: {path}: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"model {quoted(path.name)} ({path.stat().st_size / 2**20:.0f} MiB), sha256 checked in {checked_s:.1f} s, "
          f"loaded in {time.perf_counter() - started:.1f} s")
    try:
        if args.question is not None:
            passages = tuple(Chunk(f"passage#{n}", text) for n, text in enumerate(args.passage, start=1))
            started = time.perf_counter()
            scores, own = judge.read_sync(args.question, passages, args.candidate, own_answer=True)
            for candidate, p in zip(args.candidate, scores):
                print(f"P(yes) = {p:.3f}: {quoted(candidate)}")
            print(f"its own answer: {quoted(own)} ({time.perf_counter() - started:.1f} s in all)")
            return ExitCode.OK
        settings = EngineSettings().judge
        misread = 0
        for canary in CANARIES:
            started = time.perf_counter()
            scores, own = judge.read_sync(canary.question, canary.passages, (canary.answer, canary.off_topic),
                                          own_answer=True)
            wrong = check_readings(canary, scores, settings)
            print(f"{quoted(canary.question)}: the answer P = {scores[0]:.3f}, a sentence that does not answer "
                  f"P = {scores[1]:.3f}, its own answer {quoted(own)} ({time.perf_counter() - started:.1f} s)"
                  + (f": MISREAD, {wrong}" if wrong else ""))
            misread += bool(wrong)
        for item in CLAIM_CANARIES:
            started = time.perf_counter()
            judgement = judge.judge_sync(item.claim, item.evidence)
            right = (judgement.label is ClaimLabel.SUPPORTED) is item.supported
            print(f"{quoted(item.claim)}: {judgement.label.value} ({judgement.reason}, "
                  f"{time.perf_counter() - started:.1f} s)" + ("" if right else ": MISREAD"))
            misread += not right
    except JudgeModelFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    if misread:
        print(f"error: the judge misread {misread} of its canaries", file=sys.stderr)
        return ExitCode.FAILURE
    print("ready: the judge (ver-judge in config/fleet.toml) reads its canaries right")
    return ExitCode.OK
