import random

from engine.agents.faults import FaultInjector, shared_lie, tamper
from engine.types import Chunk, FaultKind, FaultProfile


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
