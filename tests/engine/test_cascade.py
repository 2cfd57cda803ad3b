"""CHARM: the trigger, the mitigation plan, the three monitors on hand-built trajectories, the cascade
monitor as a stage observer, and the model-free reasoning and tool stages."""
import dataclasses
import math
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from engine.cascade.mitigation import plan
from engine.cascade.monitor import CascadeMonitor
from engine.cascade.monitors import Monitors
from engine.settings.cascade import CascadeSettings
from engine.cascade.statements import statements
from engine.cascade.trigger import trigger
from engine.cascade.types import CascadeOutcome, Mitigation, StageScore
from engine.types import CascadeType
from engine.stages.model import (Decomposition, InterventionKind, QuestionShape, StageKind, StageResult,
                                 SubQuestion, Trajectory)
from engine.stages.reasoning import conclude
from engine.stages.runner import StageRunner
from engine.stages.tools import compare
from engine.types import Chunk, Claim

S = CascadeSettings()
R, X, RETRIEVE, REASON = CascadeType.RETRIEVAL, CascadeType.INFERENCE, StageKind.RETRIEVE, StageKind.REASON


# --- trigger --------------------------------------------------------------------------------------

@pytest.mark.parametrize("a", [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0.5, 0.25, 1.0), (0.3, 0.6, 0.2)])
def test_p_is_the_paper_weighted_sum(a):
    assert trigger(*a, REASON, S).p == pytest.approx(0.4 * a[0] + 0.4 * a[1] + 0.2 * a[2], abs=1e-3)


def test_fires_at_theta_and_not_below():
    assert trigger(0.75, 0.5, 0.25, REASON, S).fired                  # p = 0.55
    below = trigger(0.75, 0.5, 0.2, REASON, S)                        # p = 0.54, CPM under its gate
    assert not below.fired and below.cascade_type is None


def test_one_monitor_alone_cannot_reach_theta_but_cpm_passes_its_gate():
    for a in ((1.0, 0, 0), (0, 1.0, 0)):
        assert not trigger(*a, REASON, S).fired                       # p = 0.4 < 0.55
    assert not trigger(0, 0, S.cpm_gate - 0.01, REASON, S).fired
    gated = trigger(0, 0, 1.0, RETRIEVE, S)
    assert gated.p == pytest.approx(0.2) and gated.fired and gated.gated
    assert gated.cascade_type is CascadeType.CONFIDENCE_INFLATION


def test_the_type_is_one_that_can_start_at_that_stage():
    # Unrestricted, (1, 1, 0) ties INFERENCE with CONTEXT_POISONING and (0.5, 1, 0) is CONTEXT_POISONING.
    assert trigger(1, 1, 0, RETRIEVE, S).cascade_type is CascadeType.CONTEXT_POISONING
    assert trigger(1, 1, 0, REASON, S).cascade_type is X
    assert trigger(0.5, 1, 0, REASON, S).cascade_type is X
    grid = (0, 0.25, 0.5, 0.75, 1.0)
    for a in ((s, c, p) for s in grid for c in grid for p in grid):
        at_retrieve, at_reason = trigger(*a, RETRIEVE, S), trigger(*a, REASON, S)
        assert at_retrieve.cascade_type is not X
        assert at_reason.cascade_type is not CascadeType.CONTEXT_POISONING
        assert at_retrieve.fired == at_reason.fired


def test_ablation_renormalises_the_weights_of_the_monitors_left_on():
    for use, a in (((True, False, False), (1.0, 0, 0)), ((False, True, False), (0, 1.0, 0))):
        alone = trigger(*a, REASON, S, use=use)
        assert alone.p == pytest.approx(1.0) and alone.fired and not alone.gated
    assert trigger(1.0, 0.5, 0, REASON, S, use=(True, True, False)).p == pytest.approx(0.75)   # 0.6 / 0.8
    masked = trigger(1.0, 0, 0, REASON, S, use=(False, True, True))        # a monitor switched off reads 0
    assert masked.p == 0 and not masked.fired


# --- mitigation plan ------------------------------------------------------------------------------

QUESTION = "What nationality is the director of Sinister?"
HOPS = (SubQuestion("Who directed Sinister?", 0), SubQuestion("What nationality is #1?", 1))


def bridge_trajectory() -> Trajectory:
    """formulate, retrieve hop 0, reason hop 0, retrieve hop 1, reason hop 1."""
    stages = (
        StageResult(StageKind.FORMULATE, 0, 0, (QUESTION,), "Who directed Sinister? | What nationality is #1?"),
        StageResult(RETRIEVE, 1, 0, (QUESTION, "Who directed Sinister?"), "Sinister (film)"),
        StageResult(REASON, 2, 0, ("Who directed Sinister?",), "Sinister was directed by Scott Derrickson.",
                    agents=("reasoner-a",)),
        StageResult(RETRIEVE, 3, 1, (QUESTION, "What nationality is Scott Derrickson?"), "Scott Derrickson"),
        StageResult(REASON, 4, 1, ("What nationality is Scott Derrickson?",), "He is American.",
                    agents=("reasoner-a",)),
    )
    return Trajectory(QUESTION, "t-1", Decomposition(QuestionShape.BRIDGE, HOPS), stages)


def test_confidence_inflation_gates_the_stage_at_the_calibrated_confidence():
    t = bridge_trajectory()
    mitigation, i = plan(CascadeType.CONFIDENCE_INFLATION, t.stages[4], t, passages=("p-x",), calibrated=0.4234,
                         reason="why")
    assert mitigation is Mitigation.CONFIDENCE_GATE
    assert i.kind is InterventionKind.GATE and i.confidence_cap == 0.423 and i.from_index == 4


@pytest.mark.parametrize("kind", [R, CascadeType.CONTEXT_POISONING])
@pytest.mark.parametrize("stage, source", [(4, 3), (2, 1), (3, 3)])
def test_a_blamed_passage_rolls_back_to_the_retrieve_stage_of_that_hop(kind, stage, source):
    t = bridge_trajectory()
    mitigation, i = plan(kind, t.stages[stage], t, passages=("p-bad",), calibrated=0.5, reason="why")
    assert mitigation is Mitigation.ROLLBACK
    assert i.kind is InterventionKind.RERUN and i.from_index == source
    assert i.exclude_passages == {"p-bad"} and i.reason == "why"


def test_a_retrieval_cascade_with_nothing_to_blame_requeries_with_what_was_established():
    t = bridge_trajectory()
    mitigation, i = plan(R, t.stages[4], t, passages=(), calibrated=0.5, reason="why")
    assert mitigation is Mitigation.REQUERY
    assert i.kind is InterventionKind.RERUN and i.from_index == 3 and not i.exclude_passages
    assert i.refine_query.startswith("What nationality is Scott Derrickson?")
    assert "Sinister was directed by Scott Derrickson." in i.refine_query


def test_an_inference_cascade_reruns_the_stage_without_its_agents():
    t = bridge_trajectory()
    mitigation, i = plan(X, t.stages[4], t, passages=("p-bad",), calibrated=0.5, reason="why")
    assert mitigation is Mitigation.PARALLEL_VERIFIER
    assert i.kind is InterventionKind.RERUN and i.from_index == 4
    assert i.exclude_agents == {"reasoner-a"}


# --- monitors -------------------------------------------------------------------------------------

class HashEmbedder:
    """Bag of words hashed into 256 dimensions, L2-normalised: deterministic, offline, instant."""
    name = "hash"
    similarity_floor = 0.0

    def embed_passages(self, texts):
        out = np.zeros((len(texts), 256))
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % 256] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    def embed_query(self, text):
        return self.embed_passages([text])[0]


ASKED = "When was Scott Derrickson born?"
HONEST = Chunk("p-honest", "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer.",
               metadata={"title": "Scott Derrickson"})
POISONED = Chunk("p-bad", HONEST.text.replace("1966", "1961"), metadata={"title": "Scott Derrickson"})
OTHER = Chunk("p-other", "Sinister is a 2012 supernatural horror film produced by Blumhouse Productions.",
              metadata={"title": "Sinister (film)"})


@pytest.fixture(scope="module")
def monitors():
    return Monitors(HashEmbedder(), S)


def formulate() -> StageResult:
    return StageResult(StageKind.FORMULATE, 0, 0, (ASKED,), ASKED, confidence=1.0)


def retrieve(evidence, corroborated=(HONEST, OTHER), candidates=None, confidence=0.6) -> StageResult:
    return StageResult(RETRIEVE, 1, 0, (ASKED, ASKED), "Scott Derrickson", evidence=tuple(evidence),
                       corroborated=tuple(corroborated), candidates=tuple(candidates or (*evidence, *corroborated)),
                       confidence=confidence)


def reason(text, cites, evidence, confidence, asked=ASKED) -> StageResult:
    return StageResult(REASON, 2, 0, (asked,), text, claims=(Claim(text, (cites,)),), evidence=tuple(evidence),
                       confidence=confidence, agents=("reasoner-a",))


def trajectory(*stages) -> Trajectory:
    return Trajectory(ASKED, "t-2", Decomposition(QuestionShape.SINGLE, (SubQuestion(ASKED, 0),)), tuple(stages))


def scores(monitors, t):
    result = t.stages[-1]
    said = statements(result)
    sfv = monitors.sfv(t, result, said)
    return sfv, monitors.csct(t, result, said), monitors.cpm(t, result, said, sfv.support)


def test_sfv_blames_a_near_copy_the_consensus_pool_refutes(monitors):
    sfv, _, _ = scores(monitors, trajectory(formulate(), retrieve((POISONED, OTHER))))
    assert sfv.score == 1.0
    assert sfv.suspects == ("p-bad",)
    assert any("refutes" in r and "1961" in r for r in sfv.reasons)
    assert sfv.support < 1.0


def test_csct_sees_context_poisoning_when_the_honest_twin_travels_beside_it(monitors):
    _, csct, _ = scores(monitors, trajectory(formulate(), retrieve((POISONED, HONEST))))
    assert csct.score == 1.0
    assert "p-bad" in csct.suspects
    assert any("contradicts" in r for r in csct.reasons)


def test_the_honest_trajectory_scores_zero_on_sfv_and_csct(monitors):
    sfv, csct, _ = scores(monitors, trajectory(formulate(), retrieve((HONEST, OTHER))))
    assert (sfv.score, csct.score) == (0.0, 0.0)
    assert sfv.support == 1.0 and not sfv.suspects and not csct.suspects


def test_the_formulate_stage_is_never_scored(monitors):
    t = trajectory(formulate())
    assert [r.score for r in scores(monitors, t)] == [0.0, 0.0, 0.0]


def honest_upstream():
    return trajectory(formulate(), retrieve((HONEST, OTHER), candidates=(HONEST, OTHER), confidence=0.6))


def test_csct_flags_names_the_trajectory_never_handed_on(monitors):
    invented = "Scott Derrickson directed Doctor Strange for Marvel Studios."
    t = honest_upstream()
    _, novel, _ = scores(monitors, t.with_stage(reason(invented, "p-honest", (HONEST, OTHER), 0.6)))
    _, quoted, _ = scores(monitors, t.with_stage(reason(HONEST.text, "p-honest", (HONEST, OTHER), 0.6)))
    assert novel.score > 0 and any("new to the trajectory" in r and "marvel studios" in r for r in novel.reasons)
    assert quoted.score == 0.0


def test_a_paraphrase_a_judge_read_as_entailed_by_its_pooled_passage_is_no_unsupported_statement(monitors):
    """An honest LLM's own words: the word check cannot place them, a judge read them as entailed."""
    words = "The director Scott Derrickson came into the world in mid-1966 in the United States."
    answer = StageResult(StageKind.SYNTHESIZE, 2, 0, (ASKED,), words, claims=(Claim(words, ("p-honest",)),),
                         evidence=(HONEST, OTHER), confidence=0.6, agents=("gen-llm",))
    t = honest_upstream()
    unread, _, cpm_unread = scores(monitors, t.with_stage(answer))
    assert unread.score > 0 and unread.support < 1.0 and any("no corroborated passage" in r for r in unread.reasons)
    read, _, cpm_read = scores(monitors, t.with_stage(dataclasses.replace(answer, entailed=(words,))))
    assert (read.score, read.support) == (0.0, 1.0) and cpm_read.score <= cpm_unread.score
    elsewhere = dataclasses.replace(answer, claims=(Claim(words, ("p-unpooled",)),), entailed=(words,),
                                    evidence=(HONEST, OTHER, Chunk("p-unpooled", HONEST.text + " Also more.")))
    assert scores(monitors, t.with_stage(elsewhere))[0].score > 0       # a passage the pool does not hold: no pass


def test_a_conclusion_that_is_not_the_engines_own_is_read_by_the_judge_beside_it():
    """A verbatim true sentence that names another entity (the independent faulty reasoner): the words pass it,
    the judge reads it against the sub-question beside the engine's own conclusion."""
    asked = []

    def judge(question, passages, candidates):
        asked.append((question, [p.id for p in passages], list(candidates)))
        return [0.9 if "1966" in c else 0.3 for c in candidates]
    judged = Monitors(HashEmbedder(), S, judge=judge)
    t = honest_upstream()
    other = reason(OTHER.text, "p-other", (HONEST, OTHER), 0.6)
    sfv, _, cpm = scores(judged, t.with_stage(other))
    assert sfv.score == 1.0 and sfv.answers == pytest.approx(0.3 / 0.9, abs=1e-3) and "p-other" in sfv.suspects
    assert any("not the answer its passages give" in r and "own conclusion reads 0.90" in r for r in sfv.reasons)
    assert asked == [(ASKED, ["p-other", "p-honest"], [OTHER.text, HONEST.text])]
    assert cpm.score >= S.cpm_gate and trigger(sfv.score, 0.0, cpm.score, REASON, S).fired
    asked.clear()
    own = scores(judged, t.with_stage(reason(HONEST.text, "p-honest", (HONEST, OTHER), 0.6)))
    assert own[0].score == 0.0 and asked == []                  # the engine's own conclusion: nothing to ask
    unread = Monitors(HashEmbedder(), S, judge=lambda *a: None)
    assert scores(unread, t.with_stage(other))[0].score == 0.0   # no reading: the word checks alone


def test_cpm_catches_a_conclusion_surer_than_its_upstream(monitors):
    t = honest_upstream()                                   # retrieve confidence 0.6
    *_, inflated = scores(monitors, t.with_stage(reason(HONEST.text, "p-honest", (HONEST, OTHER), 0.95)))
    *_, honest = scores(monitors, t.with_stage(reason(HONEST.text, "p-honest", (HONEST, OTHER), 0.6)))
    assert inflated.score >= S.cpm_gate
    assert honest.score == 0.0


def test_cpm_catches_a_hedge_stripped_from_the_cited_passage(monitors):
    hedged = Chunk("p-gross", "Sinister reportedly grossed 87 million dollars worldwide.",
                   metadata={"title": "Sinister (film)"})
    t = trajectory(formulate(), retrieve((hedged,), corroborated=(hedged,), confidence=0.8))
    asked = "How much did Sinister gross?"
    *_, stripped = scores(monitors, t.with_stage(
        reason("Sinister grossed 87 million dollars worldwide.", "p-gross", (hedged,), 0.3, asked)))
    *_, kept = scores(monitors, t.with_stage(reason(hedged.text, "p-gross", (hedged,), 0.3, asked)))
    assert stripped.score >= 0.6 and any("reportedly" in r for r in stripped.reasons)
    assert kept.score == 0.0


def test_a_hedge_counts_as_stripped_only_where_the_statement_keeps_what_it_qualified():
    from engine.cascade.statements import stripped_hedges
    source = "Venus is the hottest planet, with an average surface temperature of about 464 degrees."
    assert stripped_hedges(source, "Venus is the hottest planet.") == set()        # the hedged part left out
    assert stripped_hedges(source, "Venus averages 464 degrees.") == {"about"}
    assert stripped_hedges(source, "Venus averages about 464 degrees.") == set()


# --- the cascade monitor as an observer -----------------------------------------------------------

def fixed(result):
    async def step(t, ex):
        return result
    return step


async def test_watching_scores_every_boundary_reports_it_and_never_intervenes(monitors):
    reported = []
    watch = CascadeMonitor(monitors, S, report=reported.append, mitigate=False)
    steps = [fixed(formulate()), fixed(retrieve((POISONED, HONEST))),
             fixed(reason(POISONED.text, "p-bad", (POISONED, HONEST), 0.6))]
    run = await StageRunner([watch]).run(trajectory(), steps)
    assert len(run.trajectory.stages) == 3 and run.interventions == ()
    assert [s.index for s in watch.scores] == [0, 1, 2]
    assert reported == watch.scores
    assert not watch.scores[0].fired and watch.scores[1].fired
    outcome = watch.outcome(run)
    assert outcome.fired and outcome.stage == 1 and outcome.resolved
    assert outcome.cascade_type is CascadeType.CONTEXT_POISONING
    assert outcome.mitigation is Mitigation.NONE and "watch only" in outcome.reason


def test_a_quiet_trajectory_has_a_quiet_outcome(monitors):
    watch = CascadeMonitor(monitors, S)
    t = honest_upstream()
    assert watch.on_stage(t.upto(1), t.stages[0]) is None
    assert watch.on_stage(t, t.stages[1]) is None
    outcome = watch.outcome()
    assert not outcome.fired and outcome.mitigation is Mitigation.NONE and len(outcome.scores) == 2


def test_mitigating_returns_the_planned_rollback(monitors):
    act = CascadeMonitor(monitors, S)
    t = trajectory(formulate(), retrieve((POISONED, HONEST)))
    assert act.on_stage(t.upto(1), t.stages[0]) is None
    intervention = act.on_stage(t, t.stages[1])
    assert intervention is not None and intervention.kind is InterventionKind.RERUN
    assert intervention.from_index == 1 and "p-bad" in intervention.exclude_passages
    assert "context_poisoning" in intervention.reason
    outcome = act.outcome()
    assert outcome.fired and outcome.stage == 1 and outcome.cascade_type is CascadeType.CONTEXT_POISONING
    assert outcome.mitigation is Mitigation.ROLLBACK and act.scores[1].suspect_passages[0] == "p-bad"


def test_the_rollback_keeps_the_corroborated_honest_twin(monitors):
    act = CascadeMonitor(monitors, S)
    t = trajectory(formulate(), retrieve((POISONED, HONEST)))
    intervention = act.on_stage(t, t.stages[1])
    assert intervention.exclude_passages == {"p-bad"}


# --- model-free reasoning and tools ---------------------------------------------------------------

DERRICKSON = Chunk("p-derr", "Scott Derrickson (born July 16, 1966) is an American director. "
                             "He directed the horror film Sinister in 2012.", metadata={"title": "Scott Derrickson"})
HAWKE = Chunk("p-hawke", "Ethan Hawke starred in Sinister.", metadata={"title": "Ethan Hawke"})


def test_conclude_quotes_the_answering_sentence_and_bridges_to_the_passage_title():
    found = conclude("Who directed Sinister?", [HAWKE, DERRICKSON], QUESTION)
    assert found.claim == Claim("He directed the horror film Sinister in 2012.", ("p-derr",))
    assert found.bridge == "Scott Derrickson"
    assert found.local_confidence == 1.0


def test_conclude_states_its_own_selection_score_not_the_monitors_word_share():
    # "sinister" is in the one sentence, "directed" in none, so the rarer missing word weighs more: the share of
    # the sub-question's weight carried is log(1.5) / (log(1.5) + log(2)), where a plain word share says 0.5.
    made = Chunk("p-made", "He made the horror film Sinister in 2012.", metadata={"title": "Horror films"})
    found = conclude("Who directed Sinister?", [made])
    assert found.local_confidence == pytest.approx(math.log(1.5) / (math.log(1.5) + math.log(2)), abs=0.001)


def test_conclude_strips_the_title_qualifier_and_finds_nothing_when_nothing_answers():
    film = Chunk("p-film", "Sinister is a 2012 horror film directed by Scott Derrickson.",
                 metadata={"title": "Sinister (film)"})
    found = conclude("Which film did Scott Derrickson direct in 2012?", [film],
                     "Who starred in the 2012 film directed by Scott Derrickson?")
    assert found.bridge == "Sinister"
    nothing = conclude("Where is Toronto located?", [film, HAWKE])
    assert nothing.claim is None and nothing.bridge == "" and nothing.local_confidence == 0.0


_BRIDGE_PROBE = """
from engine.stages.reasoning import conclude
from engine.types import Chunk
c = Chunk("p1", "Scott Derrickson worked with Ethan Hawke and James Ransone in Toronto.",
          metadata={"title": "Scott Derrickson"})
print(conclude("Who did Scott Derrickson work with in Toronto?", [c]).bridge)
"""


def test_when_the_question_names_the_title_the_bridge_is_the_first_new_name_in_the_sentence():
    root = Path(__file__).resolve().parents[2]
    bridges = {subprocess.run([sys.executable, "-c", _BRIDGE_PROBE], cwd=root, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}, check=True).stdout.strip() for seed in range(8)}
    assert bridges == {"Ethan Hawke"}


MORTON = ("Annie Morton", "Annie Morton (born October 8, 1970) is an American model.")
RICHARDSON = ("Terry Richardson", "Terry Richardson (born August 14, 1965) is an American fashion photographer.")


def test_compare_answers_who_is_older_from_birth_years():
    older = compare("Who is older, Annie Morton or Terry Richardson?", [MORTON, RICHARDSON])
    assert older.used == "date comparison"
    assert older.output.startswith("Terry Richardson") and "1970" in older.output and "1965" in older.output
    younger = compare("Who is younger, Annie Morton or Terry Richardson?", [MORTON, RICHARDSON])
    assert younger.output.startswith("Annie Morton")


def test_compare_returns_nothing_when_it_cannot_compute():
    no_year = ("Terry Richardson", "Terry Richardson is an American fashion photographer.")
    assert compare("Who is older, Annie Morton or Terry Richardson?", [MORTON, no_year]).output == ""
    assert compare("Who is older, Annie Morton or Terry Richardson?", [MORTON]).used == ""
    assert compare("Who directed Sinister?", [MORTON, RICHARDSON]).output == ""


def test_a_cascade_traced_to_a_generator_is_evidence_against_it_and_only_it():
    from engine.reputation.answer_evidence import observations
    from engine.reputation.evidence import EvidenceReason
    from engine.types import AgentOutcome, CallStatus, RiskTier, Role, Verdict
    from engine.answer import Answer
    fired = StageScore(index=2, stage=StageKind.SYNTHESIZE, hop=0, a_sfv=1.0, a_csct=1.0, a_cpm=0.0, p=0.8,
                       fired=True, cascade_type=CascadeType.INFERENCE, suspect_agents=("gen-a",))
    calm = StageScore(index=1, stage=StageKind.RETRIEVE, hop=0, a_sfv=0.0, a_csct=0.0, a_cpm=0.0, p=0.0, fired=False)
    outcome = CascadeOutcome(True, 2, CascadeType.INFERENCE, Mitigation.PARALLEL_VERIFIER, scores=(calm, fired))
    agents = tuple(AgentOutcome(a, Role.GENERATOR, CallStatus.OK, 5.0) for a in ("gen-a", "gen-b"))

    def answer(cascade):
        return Answer("t1", "q", RiskTier.MEDIUM, Verdict.ANSWERED, "", "", (), agents, (), (), {}, 0.0,
                      cascade=cascade)

    blamed = {o.agent_id: o for o in observations(answer(outcome))}
    assert blamed["gen-a"].bad == 1 and EvidenceReason.CASCADE_SOURCE in blamed["gen-a"].reasons
    assert blamed["gen-a"].engine_checked
    assert "gen-b" not in blamed or EvidenceReason.CASCADE_SOURCE not in blamed["gen-b"].reasons
    assert "gen-a" not in {o.agent_id for o in observations(answer(None))}


def test_a_fired_cascade_waits_for_review_at_the_configured_tier_and_a_halted_one_always(tmp_path):
    import dataclasses as dc
    from engine.config import load_settings
    from engine.errors import ConfigError
    from engine.review.policy import needs_review
    from engine.types import RiskTier, Verdict
    from engine.answer import Answer
    fired = CascadeOutcome(True, 1, CascadeType.RETRIEVAL, Mitigation.ROLLBACK, reason="retrieval cascade at stage 2")

    def answer(cascade, tier=RiskTier.MEDIUM):
        return Answer("t", "q", tier, Verdict.ANSWERED, "a", "", (), (), (), (), {}, 0.0, cascade=cascade)

    assert needs_review(answer(fired)) == ""                        # resolved, and medium is below "high"
    assert needs_review(answer(dc.replace(fired, review=True))).startswith("a cascade fired")
    assert needs_review(answer(dc.replace(fired, resolved=False))).startswith("a cascade was held for review")
    assert CascadeSettings().reviews("high") and not CascadeSettings().reviews("medium")
    assert CascadeSettings(review_on_fire_tier="medium").reviews("medium")
    assert not CascadeSettings(review_on_fire_tier="never").reviews("high")
    bad = tmp_path / "engine.toml"
    bad.write_text('version = 1\n[cascade]\nreview_on_fire_tier = "sometimes"\n')
    with pytest.raises(ConfigError, match="review_on_fire_tier"):
        load_settings(bad)


def test_a_comparison_is_stated_as_a_plain_sentence_and_computed_passages_are_not_checked_against_documents():
    result = compare("Which was launched first, Voyager 1 or Cassini?",
                     [("Voyager 1", "Voyager 1 was launched on 5 September 1977."),
                      ("Cassini", "Cassini was launched in October 1997 from Cape Canaveral.")])
    assert result.used == "date comparison"
    assert result.sentence == "By the dates found, Voyager 1 came first: Voyager 1 in 1977, Cassini in 1997."
    computed = Chunk("engine/tool", result.sentence, metadata={"computed": True})
    quoted = Chunk("p1", "Voyager 1 was launched on 5 September 1977.")
    synthesis = StageResult(StageKind.SYNTHESIZE, 6, 0, ("q",), result.sentence,
                            claims=(Claim(result.sentence, ("engine/tool",)), Claim(quoted.text, ("p1",))),
                            evidence=(computed, quoted))
    assert [s.text for s in statements(synthesis)] == [quoted.text]
    tool = StageResult(StageKind.TOOL, 5, 0, ("q",), result.output, claims=(Claim(result.sentence),))
    assert statements(tool) == []



def test_the_settings_choose_the_mitigation_per_type_and_review_halts_at_once(tmp_path):
    from engine.config import load_settings
    from engine.errors import ConfigError
    t = trajectory(formulate(), retrieve((POISONED, HONEST)))
    mitigation, intervention = plan(CascadeType.CONTEXT_POISONING, t.stages[1], t, passages=("p-bad",),
                                    calibrated=0.5, reason="why", choice="review")
    assert mitigation is Mitigation.HUMAN_REVIEW and intervention.kind is InterventionKind.HALT
    mitigation, intervention = plan(CascadeType.CONTEXT_POISONING, t.stages[1], t, passages=("p-bad",),
                                    calibrated=0.5, reason="why", choice="requery")
    assert mitigation is Mitigation.REQUERY and intervention.refine_query
    monitor = CascadeMonitor(Monitors(HashEmbedder(), S), CascadeSettings(on_context_poisoning="review"))
    assert monitor.on_stage(t, t.stages[1]).kind is InterventionKind.HALT
    bad = tmp_path / "engine.toml"
    bad.write_text('version = 1\n[cascade]\non_inference = "gate"\n')
    with pytest.raises(ConfigError, match="on_inference"):
        load_settings(bad)
