#!/usr/bin/env bash
# Liars that join the built-in fleet over the agent protocol, on the 40 demo questions, medium tier, the judge as
# shipped (bench/liars.py); one report per row in reports/liars/, and a summary table in reports/liars/summary.md.
#   bash bench/eval_liars.sh [--limit N]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
mkdir -p reports/liars
rows=("off-topic alone" "off-topic 2v1" "role-swap alone" "role-swap 2v1" "splice alone" "splice 2v1"
      "to-judge alone" "off-topic honest")
for row in "${rows[@]}"; do
  set -- $row "${@:1}"
  lie=$1 mode=$2; shift 2
  echo "== $lie $mode $(date +%T)"
  $PY bench/liars.py --lie "$lie" --mode "$mode" --out "reports/liars/${lie}_${mode}.json" "$@" > "reports/liars/${lie}_${mode}.log" 2>&1
  tail -n 3 "reports/liars/${lie}_${mode}.log" | head -n 1
done
$PY - <<'PY'
import json, pathlib
rows = []
for path in sorted(pathlib.Path("reports/liars").glob("*.json")):
    s = json.loads(path.read_text())["summary"]
    rows.append(f"| {s['lie']} | {s['mode']} | {s['lied_on']} | {s['lie_given_rate']} | {s['right']} | {s['abstained']} "
                f"| {s['judge_asked']} | {s['questions_to_quarantine']} | {s['honest_quarantined']} | {s['p50_s']} |")
table = ["| lie | mode | lied on | lie given | right | abstained | judge asked | questions to quarantine | honest quarantined | p50 s |",
         "|---|---|---|---|---|---|---|---|---|---|", *rows]
pathlib.Path("reports/liars/summary.md").write_text("\n".join(table) + "\n")
print("\n".join(table))
PY
