"""The real evaluation on the shared data (slow: real models; run with `make test-slow`)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.skipif(not (SHARED / "hotpotqa_dev_sample.jsonl").is_file()
                    or not (SHARED / "poisonedrag_hotpotqa.jsonl").is_file(),
                    reason=f"the shared evaluation data is not at {SHARED}")
def test_retrieval_eval_on_ten_real_questions(tmp_path):
    out = tmp_path / "agent.json"
    done = subprocess.run([sys.executable, "main.py", "eval", "retrieval", "--limit", "10", "--attack", "agent",
                           "--form", "both", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=1700)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["n_questions"] == 10 and data["settings"]["attack"] == "agent"
    assert set(data["splits"]) == {"dev", "test"} and sum(data["split_sizes"].values()) == 10
    for split in ("dev", "test"):
        for form in ("prefixed", "bare"):
            block = data["splits"][split][form]
            assert block["defense"]["n"] == data["split_sizes"][split]
            assert set(block["baselines"]) == {"naive", "union", "majority", "trustrag", "trustrag-pooled"}
            assert block["defense"]["anomaly_fpr"] is not None and block["baselines"]["naive"]["anomaly_fpr"] is None
    for form in ("prefixed", "bare"):
        block = data["forms"][form]
        assert set(block["baselines"]) == {"naive", "union", "majority", "trustrag", "trustrag-pooled"}
        for metrics in [block["defense"], *block["baselines"].values()]:
            assert {"context_asr", "poison_share", "answer_asr", "answer_accuracy", "clean_recall_at_k",
                    "anomaly_fpr", "abstention_rate", "overhead_ms_p50", "overhead_ms_p95"} <= set(metrics)
        assert block["baselines"]["naive"]["anomaly_fpr"] is None
        # DESIGN §9: the defence must beat what a one-retriever user gets (a random pick, liars included)
        assert block["defense"]["context_asr"] <= block["baselines"]["naive"]["context_asr"]
    for suffix in (".md", ".svg"):
        assert out.with_suffix(suffix).is_file()
    rows = [json.loads(x) for x in Path(f"{out.with_suffix('')}.cases.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 6 * 10
    assert all(len(r["byzantine_agents"]) == 1 and r["split"] in ("dev", "test") for r in rows)
    assert "| ctx_asr dev | ctx_asr test |" in out.with_suffix(".md").read_text()
