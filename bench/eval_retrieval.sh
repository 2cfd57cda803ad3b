#!/usr/bin/env bash
# The retrieval evaluation of issue #7: every row below on the shared data, each reported on all
# questions and on the dev and test splits. Writes reports/retrieval/<row>.{json,md,svg,cases.jsonl}
# and reports/retrieval/summary.md (one line per row: defence vs the best simple baseline).
# Run time: 584 s warm (embeddings cached) for the first 25 rows, about 80 s more for the 4 corroborated rows; the first run with an empty embedding cache took 3,150 s
# here, most of it e5 (about 13 texts/s) embedding the biogen, nq and msmarco passages.
# Options: --settings FILE (default config/engine.toml) and --out DIR (default reports/retrieval), to measure
# other thresholds without touching the shipped ones.
# Needs ../shared/data. Embeddings are cached in <user cache dir>/quorum/eval; the first run computes them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=reports/retrieval
settings=()
while [ $# -gt 0 ]; do
  case $1 in
    --settings) settings=(--settings "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--settings FILE] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
rows=()
run() {
  name=$1; shift
  echo "== $name: $*"
  local started=$SECONDS
  .venv/bin/python main.py eval retrieval "$@" "${settings[@]}" --json "$out/$name.json" \
    | grep -E "^(form|by split|method|defense|naive|union|majority|trustrag|wall)" || true
  [ -f "$out/$name.json" ] || { echo "no report for $name" >&2; exit 1; }
  echo "   ($name: $((SECONDS - started)) s)"
  rows+=("$out/$name.json")
}
run clean                --attack none
run agent_1of4           --attack agent --retrievers 4 --byzantine 1
run agent_collude_2of5   --attack agent --collude --retrievers 5 --byzantine 2
run corpus_p5            --attack corpus --poison-count 5
run corpus_p3            --attack corpus --poison-count 3
run corpus_p2            --attack corpus --poison-count 2
run corpus_p1            --attack corpus --poison-count 1
run paraphrased          --attack corpus --variant paraphrased
run no_mirror            --attack corpus --variant no-mirror
run random_rank          --attack agent --retrievers 4 --byzantine 1 --variant random-rank
run tamper_same_id       --attack tamper --variant tamper-same-id
run tamper_new_id        --attack tamper --variant tamper-new-id
run name_swap            --attack tamper --variant name-swap
run omit                 --attack omit
run adaptive             --attack corpus --variant adaptive
# strict mode (the high tier): lone passages that mirror the question must be corroborated
run strict_clean         --attack none --mode strict
run strict_corpus_p1     --attack corpus --poison-count 1 --mode strict
run strict_corpus_p2     --attack corpus --poison-count 2 --mode strict
run strict_corpus_p5     --attack corpus --poison-count 5 --mode strict
run strict_adaptive      --attack corpus --variant adaptive --mode strict
run strict_biogen_clean  --dataset biogen --attack none --mode strict
run biogen_clean         --dataset biogen --attack none
run biogen_corpus        --dataset biogen --attack corpus
run nq_corpus            --dataset nq --attack corpus
run msmarco_corpus       --dataset msmarco --attack corpus
# isolate-then-aggregate at the answer: every method's context answered only with a sentence that a
# second passage corroborates (it abstains otherwise); what it buys under 1-2 planted texts, what it costs clean
run corroborated_clean   --attack none --answerer corroborated
run corroborated_p1      --attack corpus --poison-count 1 --answerer corroborated
run corroborated_p2      --attack corpus --poison-count 2 --answerer corroborated
run corroborated_p5      --attack corpus --poison-count 5 --answerer corroborated
.venv/bin/python -m bench.evaluation.report summary "$out/summary.md" "${rows[@]}"
echo "total: $SECONDS s"
