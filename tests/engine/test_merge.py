from engine.config import RetrievalSettings
from engine.retrieval.merge import merge
from engine.types import Chunk

SETTINGS = RetrievalSettings(context_k=3)
TRUE = Chunk("moons#0", "Mars has two moons, Phobos and Deimos, found in 1877.")
OTHER = Chunk("volcano#0", "Olympus Mons is a shield volcano on Mars.")
EDITED = Chunk("moons#0", "Mars has two moons, Phobos and Deimos, found in 1881.")
FAKE = Chunk("fab#0", "Mars has three moons according to a new survey.")


def test_edited_text_is_outvoted_and_its_sender_recorded():
    report = merge({"a": (TRUE, OTHER), "b": (TRUE, OTHER), "rogue": (EDITED, OTHER)}, SETTINGS)
    top = next(c for c in report.context if c.chunk.id == "moons#0")
    assert top.chunk.text == TRUE.text
    assert top.supported_by == ("a", "b") and top.disputed_by == ("rogue",)
    assert ("rogue", "moons#0") in report.disputes


def test_a_chunk_only_one_agent_returned_stays_out_when_three_answered():
    report = merge({"a": (TRUE,), "b": (TRUE, OTHER), "liar": (FAKE, OTHER)}, SETTINGS)
    ids = [c.chunk.id for c in report.context]
    assert "fab#0" not in ids and set(ids) == {"moons#0", "volcano#0"}
    assert report.quorum == 2 and not report.fallback


def test_no_agreement_falls_back_and_says_so():
    report = merge({"a": (TRUE,), "b": (OTHER,), "c": (FAKE,)}, SETTINGS)
    assert report.fallback and len(report.context) == 3


def test_near_empty_and_oversized_chunks_are_cleaned():
    settings = RetrievalSettings(context_k=3, max_chunk_chars=20)
    report = merge({"a": (Chunk("e#0", "ok"), TRUE)}, settings)
    reasons = {(agent, cid): why for agent, cid, why in report.dropped}
    assert reasons[("a", "e#0")] == "near-empty text"
    assert "cut to 20" in reasons[("a", "moons#0")]
    assert len(report.context[0].chunk.text) == 20
