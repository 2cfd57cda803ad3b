"""The true sentence that does not answer, on the built-in fleet: how often Quorum gives it, with and without
the judge asked on disputes (the medium tier), and what the reputation book makes of its generators.

    .venv/bin/python bench/off_topic.py [--liars gen-gamma,gen-beta] [--judge] [--passes 1] [--limit 40]
                                        [--out reports/off_topic/NAME.json]

The fleet is config/fleet.toml with the named generators given the `off-topic` fault (the same seed, so two of
them agree with each other) and, with --judge, `ver-judge` enabled (after `make judge`; it stays on the high
tier's list, so on the medium tier it is asked only on a dispute). Every demo question is asked on the medium
tier. An answer is right when it holds one of the question's gold strings; "off-topic given" counts answers
that are a liar's answer and hold no gold string. The fault is built by engine/agents/faults.py from the
generator's own context and question, not from any rule of the defence.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Engine, RiskTier, Verdict, load_fleet, load_settings  # noqa: E402
from engine.types import FaultKind  # noqa: E402

JUDGE = "ver-judge"
OFF_TOPIC_SEED = 7


def fleet_with(liars: set[str], judge: bool, workdir: Path) -> Path:
    """A copy of config/fleet.toml in workdir with the liars' fault set to off-topic and the judge enabled or not.
    The agents' processes read the fleet file themselves, so the variant is a file, not only a FleetConfig; its
    relative paths (permissions, corpus, texts) reach the project's through links beside it."""
    folder = workdir / "config"
    folder.mkdir(parents=True)
    (folder / "permissions.toml").symlink_to(ROOT / "config" / "permissions.toml")
    (workdir / "resources").symlink_to(ROOT / "resources")
    head, *blocks = (ROOT / "config" / "fleet.toml").read_text().split("[[agents]]")
    seen, out = set(), [head]
    for block in blocks:
        agent_id = re.search(r'^id = "([^"]+)"', block, re.M).group(1)
        seen.add(agent_id)
        if agent_id in liars:
            block = re.sub(r"^fault = .*\n", "", block, flags=re.M)
            block = block.replace("\n", f'\nfault = {{ kind = "{FaultKind.OFF_TOPIC.value}", rate = 1.0, '
                                         f'seed = {OFF_TOPIC_SEED} }}\n', 1)
        elif agent_id == JUDGE:
            block = block.replace("enabled = false", f"enabled = {'true' if judge else 'false'}")
        out.append(block)
    if liars - seen:
        raise SystemExit(f"error: --liars: no agent {', '.join(sorted(liars - seen))} in config/fleet.toml")
    path = folder / "fleet.toml"
    path.write_text("[[agents]]".join(out))
    return path


def _holds_gold(text: str, gold: list[str]) -> bool:
    return any(g.lower() in text.lower() for g in gold)


async def run(args) -> dict:
    questions = [json.loads(line) for line in (ROOT / "resources" / "demo_questions.jsonl").read_text().splitlines()
                 if line.strip()][:args.limit]
    liars = set(filter(None, args.liars.split(",")))
    workdir = Path(tempfile.mkdtemp(prefix="quorum-off-topic-"))
    fleet = load_fleet(fleet_with(liars, args.judge, workdir))
    engine = Engine(fleet, load_settings(None), db_path=workdir / "off_topic.db",
                    cache_dir=args.cache_dir or workdir / "cache")
    rows, trust = [], []
    async with engine:
        for n in range(args.passes):
            for q in questions:
                started = time.perf_counter()
                answer = await engine.questions.ask(q["question"], RiskTier.MEDIUM)
                given = answer.verdict is Verdict.ANSWERED
                liar_answers = {c.generation.answer.strip() for c in answer.candidates if c.agent_id in liars}
                row = {"pass": n + 1, "id": q["id"], "verdict": answer.verdict.value, "answer": answer.answer,
                       "right": given and _holds_gold(answer.answer, q["answers"]),
                       "off_topic_given": given and answer.answer.strip() in liar_answers
                                          and not _holds_gold(answer.answer, q["answers"]),
                       "judged": "the judge was asked" in answer.reason,
                       "judge_unread": "no judge could read" in answer.reason,
                       "s": round(time.perf_counter() - started, 2)}
                rows.append(row)
                mark = "OFF" if row["off_topic_given"] else "ok " if row["right"] else "abs" if not given else "bad"
                print(f"{mark} p{n + 1} {q['id']} {'J' if row['judged'] else ' '} {row['s']:5.1f} s  "
                      f"{q['question'][:55]:<55} -> {answer.answer[:60]}", flush=True)
            trust.append({a.spec.id: {"score": a.trust_score, "state": a.trust_state}
                          for a in engine.fleet.agents() if a.spec.role.value == "generator" and a.spec.enabled})
    n = len(rows)
    summary = {key: sum(r[key] for r in rows) for key in ("right", "off_topic_given", "judged", "judge_unread")}
    summary |= {"questions": n, "answered": sum(r["verdict"] == "answered" for r in rows),
                "abstained": sum(r["verdict"] != "answered" for r in rows), "liars": sorted(liars),
                "judge": args.judge, "trust_after_each_pass": trust}
    return {"summary": summary, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--liars", default="gen-gamma", help="generators given the off-topic fault, comma-separated")
    parser.add_argument("--judge", action="store_true", help=f"enable {JUDGE} (after `make judge`)")
    parser.add_argument("--passes", type=int, default=1, help="times through the demo questions")
    parser.add_argument("--limit", type=int, default=40, help="demo questions asked per pass")
    parser.add_argument("--cache-dir", type=Path, help="reuse an embedding cache (default: a fresh one)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    name = f"{args.liars.replace(',', '+')}{'_judge' if args.judge else ''}"
    out = args.out or ROOT / "reports" / "off_topic" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(json.dumps(result["summary"], indent=2))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
