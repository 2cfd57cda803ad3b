import random

from engine.agents.faults import FaultInjector, shared_lie, tamper
from engine.types import Chunk, Claim, FaultKind, FaultProfile, Generation


def test_tamper_changes_a_number_then_a_name_then_negates():
    rng = random.Random(1)
    assert tamper("Voyager 1 was launched in 1977.", rng) != "Voyager 1 was launched in 1977."
    changed = tamper("The moon was found by Asaph Hall.", random.Random(2))
    assert "Asaph Hall" not in changed
    assert tamper("the sky is blue.", random.Random(3)) == "the sky is not blue."


def test_colluders_of_one_group_tell_the_same_lie():
    assert shared_lie("cabal", "Who found Phobos?") == shared_lie("cabal", "Who found Phobos?")
    assert shared_lie("cabal", "Who found Phobos?").text != shared_lie("other", "Who found Phobos?").text


def test_omit_best_drops_the_top_chunks():
    chunks = [Chunk(f"c{i}", f"text number {i} here") for i in range(5)]
    injector = FaultInjector(FaultProfile(kind=FaultKind.OMIT_BEST))
    assert [c.id for c in injector.corrupt_chunks("q", chunks)] == ["c2", "c3", "c4"]


async def test_flip_flop_alternates():
    injector = FaultInjector(FaultProfile(kind=FaultKind.FLIP_FLOP))
    assert [await injector.before_reply() for _ in range(4)] == [False, True, False, True]


async def test_rate_zero_never_lies():
    injector = FaultInjector(FaultProfile(kind=FaultKind.TAMPER, rate=0.0))
    assert not any([await injector.before_reply() for _ in range(20)])


def test_swap_takes_the_new_value_from_the_cited_passage_itself():
    from engine.agents.faults import FaultInjector
    from engine.types import Chunk, Claim, FaultKind, FaultProfile, Generation
    passage = Chunk("m9#0", "Mariner 9 entered orbit around Mars on 14 November 1971. It photographed about 85 "
                            "percent of Mars, revealing Olympus Mons.")
    honest = "Mariner 9 entered orbit around Mars on 14 November 1971."
    gen = Generation(answer=honest, claims=(Claim(honest, ("m9#0",)),), confidence=0.9)
    lie = FaultInjector(FaultProfile(kind=FaultKind.SWAP, seed=2)).corrupt_generation("When?", gen, (passage,))
    assert lie.answer != honest and lie.answer == lie.claims[0].text and lie.claims[0].citations == ("m9#0",)
    assert "85" in lie.answer and set(lie.answer.replace(".", "").split()) <= set(passage.text.replace(".", "").split())


def test_off_topic_answers_with_a_true_sentence_about_the_subject_that_is_not_the_answer():
    passage = Chunk("v1#0", "Voyager 1 was launched by NASA on 5 September 1977. Voyager 1 carries a golden record. "
                            "It is the most distant human-made object.")
    other = Chunk("m#0", "Mars has two small moons.")
    honest = "Voyager 1 was launched by NASA on 5 September 1977."
    gen = Generation(answer=honest, claims=(Claim(honest, ("v1#0",)),), confidence=0.8)
    lie = FaultInjector(FaultProfile(kind=FaultKind.OFF_TOPIC)).corrupt_generation(
        "When was Voyager 1 launched?", gen, (other, passage))
    assert lie.answer == "Voyager 1 carries a golden record." and lie.claims == (Claim(lie.answer, ("v1#0",)),)
    assert lie.confidence == 0.8
    alone = Chunk("a#0", honest)
    assert FaultInjector(FaultProfile(kind=FaultKind.OFF_TOPIC)).corrupt_generation("When?", gen, (alone,)) == gen
