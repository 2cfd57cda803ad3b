"""bench/off_topic.py's fleet: a file the agents' processes read, with the liars' fault and the judge as asked."""
import pytest

from bench.off_topic import JUDGE, fleet_with
from engine import load_fleet
from engine.types import FaultKind


def test_the_variant_fleet_gives_the_liars_off_topic_and_enables_the_judge(tmp_path):
    fleet = load_fleet(fleet_with({"gen-gamma", "gen-beta"}, True, tmp_path))
    faults = {a.id: a.fault.kind for a in fleet.agents}
    assert faults["gen-gamma"] is faults["gen-beta"] is FaultKind.OFF_TOPIC
    assert faults["gen-alpha"] is FaultKind.NONE
    assert fleet.agent("gen-gamma").fault.seed == fleet.agent("gen-beta").fault.seed   # the two agree
    assert fleet.agent(JUDGE).enabled
    assert fleet.permissions is not None and fleet.permissions.is_file()
    assert fleet.corpus_dir.is_dir() and any(fleet.corpus_dir.glob("*.md"))


def test_without_judge_it_stays_off_and_an_unknown_liar_is_named(tmp_path):
    fleet = load_fleet(fleet_with({"gen-gamma"}, False, tmp_path / "a"))
    assert not fleet.agent(JUDGE).enabled and fleet.agent("gen-beta").fault.kind is FaultKind.NONE
    with pytest.raises(SystemExit, match="no agent gen-zeta"):
        fleet_with({"gen-zeta"}, False, tmp_path / "b")
