"""The end-to-end scenarios' verdicts, and (slow) one short run on a real fleet."""
import pytest

from bench.evaluation.injection_scenarios import ScenarioReport, fleet_toml, permissions_toml

from ..conftest import SHARED_DATA


def passing() -> ScenarioReport:
    return ScenarioReport(questions=3, planted=3, planted_blocked=3, memory_writes=2, memory_blocked=2,
                          memory_slipped=1, memory_found=1, memory_rolled_back_clean=True,
                          other_namespaces_touched=False, overreach_requests=8, overreach_refused_audited=8)


def test_all_three_hold_on_a_clean_run():
    assert passing().verdicts() == {"retrieval_injection_blocked": True, "memory_rollback_ok": True,
                                    "matrix_enforced": True}


@pytest.mark.parametrize("change, broken", [
    (dict(planted_reached_generator=1), "retrieval_injection_blocked"),
    (dict(planted=0, planted_blocked=0), "retrieval_injection_blocked"),       # nothing planted proves nothing
    (dict(memory_found=0), "memory_rollback_ok"),                              # a stored entry never found
    (dict(memory_rolled_back_clean=False), "memory_rollback_ok"),
    (dict(other_namespaces_touched=True), "memory_rollback_ok"),
    (dict(overreach_refused_audited=7), "matrix_enforced"),
    (dict(outbox_rows=1), "matrix_enforced"),
])
def test_each_failure_turns_its_scenario_false(change, broken):
    report = passing()
    for key, value in change.items():
        setattr(report, key, value)
    verdicts = report.verdicts()
    assert verdicts[broken] is False
    assert all(v for k, v in verdicts.items() if k != broken)


def test_the_scenario_fleet_gives_the_overreacher_no_tool_it_asks_for(tmp_path):
    from engine.gateway.permissions_config import load_permissions
    from engine.agents.faults import OVERREACH_ACTIONS
    path = tmp_path / "permissions.toml"
    path.write_text(permissions_toml())
    matrix = load_permissions(path)
    for action in OVERREACH_ACTIONS:
        if action.tool == "message":      # messages are governed by can_send_to: the target is refused
            assert not matrix.check_send("gen-overreach", action.params["to"], "retriever").allowed
        else:
            assert not matrix.check_tool("gen-overreach", action.tool).allowed
    assert 'kind = "inject"' in fleet_toml(tmp_path / "t.jsonl")


@pytest.mark.slow
async def test_a_short_run_on_a_real_fleet(tmp_path):
    from bench.evaluation import injection_scenarios
    from bench.evaluation.injection import load
    report = await injection_scenarios.run(load(SHARED_DATA / "prompt_injections.jsonl"), questions=3,
                                           workdir=tmp_path)
    assert report.questions == 3 and report.planted >= 1
    assert report.verdicts()["matrix_enforced"] and report.verdicts()["retrieval_injection_blocked"]
