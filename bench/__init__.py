"""What measures Quorum, outside the product: the evaluation harness on public data (`bench.evaluation`, `main.py
eval`), the benchmarks (`bench.perf`, `main.py bench`) and the gateway classifier's training (`bench.train`,
`main.py gateway train`). It imports the engine; the engine and the console never import it (an import-linter
contract in pyproject.toml says so). The scripts and settings files beside this package run the evaluations
of the README (eval_*.sh) and the demo-question benchmark (demo_questions.py)."""
