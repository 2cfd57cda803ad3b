"""Risk tiers: operator-editable rules classify a question, an operator's choice overrides them, and a
bad rule is an error naming the file and the key."""
import pytest

from engine.config import load_settings
from engine.errors import ConfigError
from engine.risk import RiskPolicy, RiskRule, TierSource
from engine.types import RiskTier


def test_shipped_rules_send_medical_legal_financial_and_irreversible_questions_to_high():
    policy = load_settings().risk
    for question, rule in (("What dosage of ibuprofen is safe?", "medical"),
                           ("Can we terminate the contract early?", "legal"),
                           ("Should I invest in the fund?", "financial"),
                           ("Please delete the old mission logs", "irreversible action")):
        decision = policy.classify(question)
        assert decision.tier is RiskTier.HIGH and decision.source is TierSource.RULE
        assert f'"{rule}"' in decision.reason


def test_no_match_takes_the_default_and_words_match_whole_words_only():
    policy = load_settings().risk
    decision = policy.classify("Which undeleted drugstore logs exist?")   # not "delete", not "drug"
    assert decision.tier is RiskTier.MEDIUM and decision.source is TierSource.DEFAULT


def test_the_operator_overrides_the_rules():
    decision = load_settings().risk.classify("What dosage is safe?", override=RiskTier.LOW)
    assert decision.tier is RiskTier.LOW and decision.source is TierSource.OPERATOR


def test_high_rules_win_over_low_ones_whatever_their_order():
    policy = RiskPolicy(default=RiskTier.MEDIUM, rules=(
        RiskRule(RiskTier.LOW, "internal", patterns=(r"^how do i\b",)),
        RiskRule(RiskTier.HIGH, "irreversible", words=("wipe",))))
    assert policy.classify("How do I wipe a disk?").tier is RiskTier.HIGH
    assert policy.classify("How do I find the logs?").tier is RiskTier.LOW


def _settings_file(tmp_path, body):
    path = tmp_path / "engine.toml"
    path.write_text("version = 1\n" + body, encoding="utf-8")
    return path


@pytest.mark.parametrize("body, key, words", [
    ('[[risk.rules]]\ntier = "urgent"\nname = "x"\nwords = ["a"]\n', "risk.rules[0].tier", "urgent"),
    ('[[risk.rules]]\ntier = "high"\nname = "x"\npatterns = ["(unclosed"]\n', "risk.rules[0].patterns[0]",
     "regular expression"),
    ('[[risk.rules]]\ntier = "high"\nname = "x"\n', "risk.rules[0]", "words or patterns"),
    ('[[risk.rules]]\ntier = "high"\nwords = ["a"]\n', "risk.rules[0].name", "missing"),
    ('[risk]\ndefault = "severe"\n', "risk.default", "severe"),
    ('[risk]\nrule = []\n', "risk.rule", "unknown key"),
])
def test_bad_rules_name_the_file_and_the_key(tmp_path, body, key, words):
    path = _settings_file(tmp_path, body)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    message = str(caught.value)
    assert str(path) in message and key in message and words in message


def test_rules_in_the_file_replace_the_built_in_ones(tmp_path):
    path = _settings_file(tmp_path, '[risk]\ndefault = "low"\n[[risk.rules]]\ntier = "high"\nname = "launch"\n'
                                    'words = ["launch window"]\n')
    policy = load_settings(path).risk
    assert policy.classify("When is the launch window?").tier is RiskTier.HIGH
    assert policy.classify("What dosage is safe?").tier is RiskTier.LOW     # the medical rule is not in this file
