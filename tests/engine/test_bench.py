"""main.py bench and bench soak (bench/perf): what they measure and how they report it. No figure is asserted
here: the benchmarks print and write figures; these tests check that every path is measured, that the
derived figures come from the measured ones, and that bad input is refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.perf.measure import open_fds, rss_mb
from bench.perf.paths import PATHS, PathSamples, agent_stages, is_correct, load_questions, run_paths
from bench.perf.report import write_paths_report
from bench.perf.soak import Sample, fleet_files, summarise
from engine import Engine, InputError, load_fleet, load_settings
from engine.stats import quantile
from engine.types import AgentOutcome, CallStatus, Role

from ..conftest import FAST_SETTINGS



def test_quantile_is_the_nearest_rank():
    values = list(range(1, 101))
    assert quantile(values, 0.5) == 50 and quantile(values, 0.95) == 95 and quantile(values, 0.99) == 99
    assert quantile(values, 1.0) == 100 and quantile([7.0], 0.99) == 7.0 and quantile([], 0.5) == 0.0


def test_this_process_has_memory_and_descriptors():
    assert rss_mb() > 10 and open_fds() > 2
    assert rss_mb(2 ** 22 + 12345) == 0.0 and open_fds(2 ** 22 + 12345) == -1    # no such process


def test_questions_file_errors_name_the_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "Q?", "answers": ["x"]}\n{"id": "b"}\n')
    with pytest.raises(InputError, match=r"q.jsonl:2: not a question record"):
        load_questions(path)
    path.write_text("\n\n")
    with pytest.raises(InputError, match="no questions"):
        load_questions(path)


def test_a_correct_answer_contains_a_gold_string():
    assert is_correct("Mars has two moons, Phobos and Deimos.", ["phobos"])
    assert not is_correct("", ["phobos"]) and not is_correct("Jupiter", ["phobos", "deimos"])


def test_the_agents_share_is_the_slowest_call_of_each_role():
    outcomes = [AgentOutcome("r1", Role.RETRIEVER, CallStatus.OK, 12.0), AgentOutcome("r2", Role.RETRIEVER, CallStatus.OK, 30.0),
                AgentOutcome("g1", Role.GENERATOR, CallStatus.OK, 5.0)]
    assert agent_stages(outcomes) == {"agents_retriever": 30.0, "agents_generator": 5.0}


def test_path_samples_summarise_what_was_added():
    samples = PathSamples()
    for wall, ok in ((100.0, True), (300.0, False), (200.0, True)):
        samples.add(wall, {"retrieve": wall / 2}, ok, ok)
    summary = samples.summary()
    assert summary["n"] == 3 and summary["p50_ms"] == 200.0 and summary["p95_ms"] == 300.0
    assert summary["accuracy"] == round(2 / 3, 3) and summary["stages_p50_ms"] == {"retrieve": 100.0}
    assert summary["judge"]["asked_share"] is None          # naive: no judge note at all


def test_path_samples_say_how_often_the_judge_read_and_what_it_cost():
    from engine.types import JudgeNote, MeaningStatus
    samples = PathSamples()
    samples.add(100.0, {}, True, True, JudgeNote())
    samples.add(3000.0, {}, True, True, JudgeNote(MeaningStatus.READ, "a lone answer", read_ms=2400.0, readings=2))
    samples.add(200.0, {}, True, True, JudgeNote(MeaningStatus.NOT_READ, "a lone answer", "no judge"))
    samples.add(4000.0, {}, True, True, JudgeNote(MeaningStatus.READ, "a dispute", read_ms=3000.0, readings=3))
    judge = samples.summary()["judge"]
    assert judge["asked_share"] == 0.5 and judge["not_read"] == 1
    assert (judge["read_ms_p50"], judge["per_text_ms_p50"], judge["per_text_ms_p95"]) == (2400.0, 1000.0, 1200.0)
    assert (judge["p50_ms_asked"], judge["p50_ms_not_asked"]) == (3000.0, 100.0)


def _sample(t, rss, p99, fds=20, tasks=2, answered=5) -> Sample:
    return Sample(t, int(t), int(t), 0, 0, rss, 100.0, fds, tasks, 10, answered, p99 / 2, p99)


def test_soak_growth_is_measured_from_the_end_of_the_warm_up():
    samples = [_sample(t, rss, p99) for t, rss, p99 in
               ((30, 500.0, 900), (60, 600.0, 300), (90, 610.0, 200), (120, 612.0, 250), (150, 630.0, 220))]

    class Args:
        agents, rate, in_flight, tier = 50, 10.0, 8, "auto"
    result = summarise(samples, Args)
    # The warm-up is a tenth of the run, at least a minute: the growth counts from the sample at 60 s.
    assert result["warmup_s"] == 60 and result["rss_mb_at_warmup"] == 600.0 and result["rss_mb_end"] == 630.0
    assert result["rss_growth"] == 0.05
    assert result["p99_ms_per_minute"] == [900, 250, 220]      # minutes 1, 2 and 3: the worst sample of each
    assert result["achieved_rate"] == round(150 / 150, 2)


def test_a_soak_fleet_has_four_retrievers_to_a_generator(tmp_path):
    fleet = load_fleet(fleet_files(tmp_path, 50, Path(__file__).resolve().parents[1] / "data" / "corpus"))
    roles = [a.role for a in fleet.agents]
    assert len(roles) == 50 and roles.count(Role.GENERATOR) == 10
    assert {a.backend for a in fleet.agents if a.role is Role.RETRIEVER} == {"bm25", "bm25-title", "tfidf"}


@pytest.mark.parametrize("argv, fragment", [
    (["bench", "--rounds", "0"], "--rounds and --concurrency must be at least 1"),
    (["bench", "soak", "--agents", "2"], "--agents must be at least 4"),
    (["bench", "soak", "--rate", "500"], "rate"),
])
def test_bad_bench_input_exits_2_naming_it(argv, fragment, capsys):
    import main
    assert main.main(argv) == 2
    assert fragment in capsys.readouterr().err


async def test_every_path_is_measured_on_a_real_fleet(small_fleet_file, db_path, cache_dir, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in (
        {"id": "mars", "question": "What are the moons of Mars?", "answers": ["Phobos"]},
        {"id": "titan", "question": "What is the largest moon of Saturn?", "answers": ["Titan"]},
        {"id": "venus", "question": "How does Venus rotate?", "answers": ["retrograde", "backwards"]})) + "\n")
    lines: list[str] = []
    async with Engine(load_fleet(small_fleet_file), load_settings(FAST_SETTINGS), db_path=db_path,
                      cache_dir=cache_dir) as engine:
        result = await run_paths(engine, load_questions(questions), rounds=1, concurrency=2, progress=lines.append)
    for path in PATHS:
        assert result[path]["n"] == 3 and result[path]["failed"] == 0 and result[path]["p50_ms"] > 0
    assert set(result["naive"]["stages_p50_ms"]) == {"agents_retriever", "agents_generator"}
    assert {"retrieve", "secure_retrieval", "adjudicate"} <= set(result["standard"]["stages_p50_ms"])
    assert result["overhead_ratio_standard"] == round(result["standard"]["p50_ms"] / result["naive"]["p50_ms"], 2)
    assert result["saturation"]["standard"]["questions"] == 3 and result["qps_standard"] > 0
    assert result["cache_lookups"] > 0 and 0 <= result["cache_hit_rate"] <= 1
    assert result["rss_mb"] > 0 and set(result["memory"]["agents_rss_mb"]) == {
        "ret-e5", "ret-bm25", "ret-rogue", "gen-a", "gen-b", "gen-liar"}
    assert any(line.startswith("[3/3]") for line in lines)

    json_path = tmp_path / "bench.json"
    md, svg = write_paths_report(json_path, result, "python main.py bench")
    text = md.read_text()
    for path in PATHS:
        assert f"| {path} | {result[path]['p50_ms']:.0f} |" in text
    assert svg.read_text().startswith("<svg") and "| secure_retrieval |" in text
