#!/usr/bin/env bash
# The generation evaluation of issue #7: three different honest generators (extractive, focused-passage,
# paraphrase) against liars that build their lies from the cited passage (swap-in-passage, role-swap,
# true-irrelevant, wrong-relevant, collude-2v1, liar-alone, challenge-liar), plus a clean run, on the
# 200 HotpotQA questions; dev and test splits side by side. Then the legacy fault rules for comparison.
# Run time: 92 s warm, about 5 minutes with an empty embedding cache.
# Writes reports/generation/{generation,legacy}.{json,md,svg,cases.jsonl}. Needs ../shared/data.
# Extra arguments go to both runs (e.g. --limit 20).
set -euo pipefail
cd "$(dirname "$0")/.."
out=reports/generation
mkdir -p "$out"
started=$(date +%s)
echo "== headline lies"
.venv/bin/python main.py eval generation --json "$out/generation.json" "$@"
echo "== legacy fault rules (for comparison)"
.venv/bin/python main.py eval generation --profiles fabricate,contradict,tamper,bias,uncited,omit-best \
  --json "$out/legacy.json" "$@" | sed -n '/^trusted generation/,/^pooled/p'
echo "eval_generation.sh: total wall time $(( $(date +%s) - started )) s"
