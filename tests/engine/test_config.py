import pytest

from engine import ConfigError, FaultKind, Role, load_fleet, load_settings
from engine.config import DEFAULT_FLEET

from ..conftest import write_fleet


def test_default_fleet_has_byzantine_agents_of_each_role():
    fleet = load_fleet(DEFAULT_FLEET)
    enabled = [a for a in fleet.agents if a.enabled]
    for role in (Role.RETRIEVER, Role.GENERATOR):
        members = [a for a in enabled if a.role is role]
        assert len(members) >= 3
        assert any(a.fault.kind is not FaultKind.NONE for a in members)


def test_default_settings_load():
    settings = load_settings()
    assert settings.retrieval.context_k == 5
    assert settings.tier(__import__("engine").RiskTier.LOW).retrievers == 2


def _error(tmp_path, text) -> ConfigError:
    path = tmp_path / "f.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    assert str(path) in str(info.value)
    return info.value


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_fleet(tmp_path / "nope.toml")


def test_broken_toml(tmp_path):
    assert "not valid TOML" in str(_error(tmp_path, "version = 1\n[[agents]\n"))


def test_wrong_version(tmp_path):
    err = _error(tmp_path, "version = 7\n")
    assert err.key == "version"


def test_unknown_key_is_named(tmp_path):
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "retriever"\nbackend = "bm25"\ncolour = "red"\n')
    with pytest.raises(ConfigError) as info:
        load_fleet(fleet)
    assert info.value.key == "agents[6] (x).colour"
    assert "unknown key" in info.value.reason


def test_bad_url(tmp_path):
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "ext"\nrole = "retriever"\nurl = "ftp:/nowhere"\n')
    with pytest.raises(ConfigError, match=r"agents\[6\] \(ext\)\.url: expected an http\(s\) URL"):
        load_fleet(fleet)


def test_bad_enum_lists_choices(tmp_path):
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "oracle"\nbackend = "bm25"\n')
    with pytest.raises(ConfigError, match="expected one of retriever, generator, verifier, found 'oracle'"):
        load_fleet(fleet)


def test_duplicate_id(tmp_path):
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "gen-a"\nrole = "generator"\nbackend = "extractive"\n')
    with pytest.raises(ConfigError, match="duplicate agent id"):
        load_fleet(fleet)


def test_collude_needs_group(tmp_path):
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "c"\nrole = "retriever"\nbackend = "bm25"\n'
                                        'fault = { kind = "collude" }\n')
    with pytest.raises(ConfigError, match="fault.group"):
        load_fleet(fleet)


def test_settings_type_error_names_key(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('version = 1\n[retrieval]\ncontext_k = "five"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert info.value.key == "retrieval.context_k"
    assert "expected int" in info.value.reason


def test_an_older_meaning_table_says_the_meaning_verifier_was_removed(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text("version = 1\n[meaning]\nenabled = false\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert info.value.file == str(path) and info.value.key == "meaning"
    assert "meaning verifier was removed" in info.value.reason and "[judge]" in info.value.reason


@pytest.mark.parametrize("level", ["SYSTEM", "USER"])
def test_an_agent_cannot_be_given_an_instructing_trust_level(tmp_path, level):
    fleet = write_fleet(tmp_path, extra=f'[[agents]]\nid = "x"\nrole = "retriever"\nbackend = "bm25"\ntrust = "{level}"\n')
    with pytest.raises(ConfigError, match=r"agents\[\d+\] \(x\)\.trust.*TOOL or EXTERNAL"):
        load_fleet(fleet)


def test_permissions_are_operations_and_never_empty(tmp_path):
    unknown = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "retriever"\nbackend = "bm25"\n'
                                          'permissions = ["retrieve", "shell"]\n')
    with pytest.raises(ConfigError, match=r"permissions.*'shell'"):
        load_fleet(unknown)
    empty = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "retriever"\nbackend = "bm25"\npermissions = []\n')
    with pytest.raises(ConfigError, match="no permissions"):
        load_fleet(empty)
    granted = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "retriever"\nbackend = "bm25"\n')
    assert load_fleet(granted).agent("x").permissions == ("retrieve",)


def test_an_agent_is_only_called_for_an_operation_it_is_permitted(tmp_path):
    from engine.registry import AgentRegistry
    from engine.types import AgentState, RiskTier
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "generator"\nbackend = "extractive"\n'
                                        'permissions = ["retrieve"]\n')
    registry = AgentRegistry(load_fleet(fleet))
    registry.set_state("x", AgentState.UP, url="http://127.0.0.1:1")
    assert "x" not in [v.spec.id for v in registry.eligible(Role.GENERATOR, RiskTier.MEDIUM)]


def test_an_agent_is_asked_only_on_the_tiers_it_lists(tmp_path):
    from engine.registry import AgentRegistry
    from engine.types import AgentState, RiskTier
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "j"\nrole = "verifier"\nbackend = "llm-judge"\n'
                                        'tiers = ["high"]\n')
    registry = AgentRegistry(load_fleet(fleet))
    registry.set_state("j", AgentState.UP, url="http://127.0.0.1:1")
    assert [v.spec.id for v in registry.eligible(Role.VERIFIER, RiskTier.HIGH)] == ["j"]
    assert "j" not in [v.spec.id for v in registry.eligible(Role.VERIFIER, RiskTier.MEDIUM)]
    assert load_fleet(write_fleet(tmp_path)).agents[0].tiers == frozenset(RiskTier)       # left out: every tier
    for bad, why in (('"urgent"', "urgent"), ('[]', "non-empty list"), ('["urgent"]', "urgent")):
        broken = write_fleet(tmp_path, extra=f'[[agents]]\nid = "j"\nrole = "verifier"\nbackend = "llm-judge"\n'
                                             f'tiers = {bad}\n')
        with pytest.raises(ConfigError, match=rf"agents.*tiers.*{why}"):
            load_fleet(broken)


def test_the_shipped_judge_is_on_and_asked_on_the_medium_and_high_tiers_never_the_low():
    from engine.types import JUDGE_BACKEND, RiskTier
    judge = load_fleet(None).agent("ver-judge")
    assert (judge.backend, judge.enabled, judge.tiers) == (JUDGE_BACKEND, True, frozenset({RiskTier.MEDIUM,
                                                                                           RiskTier.HIGH}))
    assert judge.judge


def test_an_openai_compatible_server_may_be_a_judge_but_never_a_retriever(tmp_path):
    entry = '[[agents]]\nid = "j"\nrole = "{role}"\nkind = "openai-chat"\nurl = "http://127.0.0.1:8080"\nmodel = "m"\n'
    judge = load_fleet(write_fleet(tmp_path, extra=entry.format(role="verifier"))).agent("j")
    assert judge.judge and not judge.builtin
    with pytest.raises(ConfigError, match="openai-chat is for external generators and judges"):
        load_fleet(write_fleet(tmp_path, extra=entry.format(role="retriever")))


def test_inject_texts_file_must_exist(tmp_path):
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "x"\nrole = "retriever"\nbackend = "bm25"\n'
                                        'fault = { kind = "inject", texts_file = "missing.jsonl" }\n')
    with pytest.raises(ConfigError, match=r"fault\.texts_file.*no such file"):
        load_fleet(fleet)
