#!/usr/bin/env bash
# The reputation evaluation of issue #8 (`main.py eval reputation`): 1,000 questions (the 40 demo and 200
# HotpotQA questions, cycled) answered on the real engine code by a fleet with a constant liar, a 20%
# liar, a sleeper, a subtle (swap-in-passage) liar, two colluding slanderer retrievers and two slanderer
# verifiers, a flaky honest retriever and honest agents of each role; once with the reputation book
# live, once frozen. Dev seeds 1-2 (any evaluation choice was tuned on them) draw the dev half of the
# questions, test seeds 11-13 (reported) the test half: no question is replayed across the two.
# Writes reports/reputation/seed-<S>.{json,md,svg,scores.json} and reports/reputation/summary.md.
# Run time: about 8 minutes a seed warm on 2 cores (both runs), so about 40 minutes; the first run with an
# empty embedding cache adds a few minutes (e5 and MiniLM embed the 2,296 passages and the claims).
# Needs ../shared/data. Extra arguments go to every run (e.g. --questions 300); SEEDS="1 11" runs those seeds
# only (two invocations with different SEEDS can share the two cores), and the summary covers every
# seed-*.json in reports/reputation.
set -euo pipefail
cd "$(dirname "$0")/.."
out=reports/reputation
mkdir -p "$out"
started=$(date +%s)
for seed in ${SEEDS:-1 2 11 12 13}; do
  # dev seeds draw the dev half of the questions, test seeds the other half (#29: no question replayed)
  split=test; [ "$seed" -lt 10 ] && split=dev
  echo "== seed $seed ($split questions)"
  .venv/bin/python main.py eval reputation --seed "$seed" --split "$split" --json "$out/seed-$seed.json" "$@" \
    | sed -n '/^reputation evaluation/,/^wall time/p'
done
.venv/bin/python -m bench.evaluation.reputation_report summary "$out/summary.md" $(ls "$out"/seed-*.json | grep -v "\.scores\.json$" | sort -V)
echo "eval_reputation.sh: total wall time $(( $(date +%s) - started )) s"
