"""`main.py judge check [--premise P --hypothesis H]`: is the LLM judge ready? (`make judge` runs it last.)

Joins and checks the model (engine/verify/judge_model.py), loads it, and asks it one pair, or by default a
supported pair and the same premise with the roles of its names exchanged, and whether an answer answers its
question (one that does, one true sentence that does not), printing P(yes) and how long each took. Exit codes: 0 ready (the default pairs read right), 1 the judge misread a default pair, 2 llama-cpp-python
or a part package is missing, or the parts do not join to the pinned file (the message says which and how).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from engine.untrusted import quoted

from .exit_codes import ExitCode

CHECK_PREMISE = "Asaph Hall discovered the two moons of Mars, Phobos and Deimos, in 1877."
CHECK_PAIRS = ((CHECK_PREMISE, "Asaph Hall discovered Phobos and Deimos in 1877.", True),
               (CHECK_PREMISE, "Phobos and Deimos discovered Asaph Hall in 1877.", False))
CHECK_QUESTION = "Who discovered the moons of Mars?"
CHECK_ANSWERS = ((CHECK_QUESTION, "Asaph Hall discovered them in 1877.", True),
                 (CHECK_QUESTION, "Mars is the fourth planet from the Sun.", False))


def add_parser(sub) -> None:
    judge = sub.add_parser("judge", help="the LLM judge (a verifier agent, backend llm-judge): check that `make judge` "
                                         "installed it")
    actions = judge.add_subparsers(dest="judge_action", required=True, metavar="{check}")
    check = actions.add_parser("check", help="join and check the model, load it, and ask it one pair")
    check.add_argument("--premise", help="the evidence (default: a built-in pair and its role swap)")
    check.add_argument("--hypothesis", help="the claim to read against --premise")
    check.add_argument("--cache-dir", type=Path, help="where the joined model is kept (default: Quorum's cache)")


def run(args) -> int:
    from engine.engine import default_cache_dir
    from engine.verify.judge import ANSWERS_AT, SUPPORTED_AT, QwenYesNo
    from engine.verify.judge_model import JudgeModelCorrupt, JudgeModelMissing, judge_model_path
    if (args.premise is None) != (args.hypothesis is None):
        print("error: give --premise and --hypothesis together", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        started = time.perf_counter()
        path = judge_model_path(args.cache_dir or default_cache_dir())
        checked_s = time.perf_counter() - started
        started = time.perf_counter()
        model = QwenYesNo(path)
    except (JudgeModelMissing, JudgeModelCorrupt) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except ValueError as exc:          # llama.cpp could not load the file
        print(f"error: {path}: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"model {quoted(path.name)} ({path.stat().st_size / 2**20:.0f} MiB), sha256 checked in {checked_s:.1f} s, "
          f"loaded in {time.perf_counter() - started:.1f} s")
    pairs = ((args.premise, args.hypothesis, None),) if args.premise is not None else CHECK_PAIRS
    misread = 0
    for premise, hypothesis, expected in pairs:
        started = time.perf_counter()
        p = model.p_yes(premise, hypothesis)
        supported = p >= SUPPORTED_AT
        print(f"P(yes) = {p:.3f} ({'supported' if supported else 'not supported'}) in "
              f"{time.perf_counter() - started:.1f} s: premise {quoted(premise)}, hypothesis {quoted(hypothesis)}")
        misread += expected is not None and supported is not expected
    for question, answer, expected in (CHECK_ANSWERS if args.premise is None else ()):
        started = time.perf_counter()
        p = model.p_answers(question, answer)
        answers = p >= ANSWERS_AT
        print(f"P(answers) = {p:.3f} ({'answers' if answers else 'does not answer'}) in "
              f"{time.perf_counter() - started:.1f} s: question {quoted(question)}, answer {quoted(answer)}")
        misread += answers is not expected
    if misread:
        print(f"error: the judge misread {misread} of the built-in pairs and answers", file=sys.stderr)
        return ExitCode.FAILURE
    print("ready: enable the ver-judge agent in config/fleet.toml (enabled = true)")
    return ExitCode.OK
