#!/usr/bin/env bash
# The retrieval evaluation of issue #3: six settings on the 99 PoisonedRAG/HotpotQA questions, both
# poison forms. Writes reports/retrieval/<setting>.{json,md,svg,cases.jsonl}. Needs ../shared/data.
# The first run embeds ~2,800 passages (about 6 minutes here); later runs take seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."
out=reports/retrieval
mkdir -p "$out"
run() {
  name=$1; shift
  echo "== $name: $*"
  .venv/bin/python main.py eval retrieval "$@" --form both --json "$out/$name.json" | grep -E "^(form|method|defense|naive|union|majority|trustrag)"
}
run none --attack none
run agent --attack agent --retrievers 4 --byzantine 1
run agent_collude --attack agent --collude --retrievers 5 --byzantine 2
run corpus --attack corpus
run tamper --attack tamper
run omit --attack omit
