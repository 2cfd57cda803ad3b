"""The corroborated answerer quotes only what a second passage carries, and abstains otherwise."""
from engine.agents.corroborated import CorroboratedGenerator
from engine.agents.extractive import ExtractiveGenerator
from engine.types import Chunk

QUESTION = "Who directed the film Night Harbour?"
PLANTED = Chunk("p1", "The film Night Harbour was directed by Karl Brenner, who shot it in one winter.")
HONEST = Chunk("h1", "Night Harbour is a 1958 film directed by Ada Lindqvist.")
SECOND = Chunk("h2", "Ada Lindqvist began her career as an editor before she turned to directing.")
UNRELATED = Chunk("u1", "The harbour of Bergen freezes rarely in winter.")


def test_answers_with_the_sentence_a_second_passage_carries():
    context = (PLANTED, HONEST, SECOND, UNRELATED)
    # The plain extractive answer quotes the planted passage, which matches the question best.
    assert "Brenner" in ExtractiveGenerator().generate(QUESTION, context).answer
    generation = CorroboratedGenerator().generate(QUESTION, context)
    assert "Ada Lindqvist" in generation.answer
    assert generation.claims[0].citations == ("h1",)
    assert "h2" in generation.reasoning[-1]


def test_abstains_when_every_candidate_rests_on_one_passage():
    generation = CorroboratedGenerator().generate(QUESTION, (PLANTED, HONEST, UNRELATED))
    assert generation.answer == "" and generation.claims == ()
    assert "one source" in generation.reasoning[0]


def test_abstains_without_a_matching_sentence():
    generation = CorroboratedGenerator().generate("Which river feeds Lake Orr?", (UNRELATED,))
    assert generation.answer == ""
