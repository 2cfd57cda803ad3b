"""The attack builders' own text helpers (bench/evaluation/attack_text.py): where a sentence ends, which words carry
a text's content, and how much of one text another holds."""
import pytest

from bench.evaluation.attack_text import STOPWORDS, content_words, sentences, share_of_words, words


def test_a_text_splits_at_its_sentence_ends():
    text = "Pluto was found in 1930. It is a dwarf planet! Is it far?  Yes."
    assert sentences(text) == ["Pluto was found in 1930.", "It is a dwarf planet!", "Is it far?", "Yes."]


def test_every_sentence_is_a_verbatim_slice_of_the_text():
    text = "  Dr. Ada  Byron wrote notes.\tShe was born in London.  "
    assert all(s in text for s in sentences(text))
    assert sentences(text) == ["Dr. Ada  Byron wrote notes.", "She was born in London."]


@pytest.mark.parametrize("text", [
    "Dr. Smith met Mr. Jones at St. Paul's Cathedral.",
    "The book is by J. R. R. Tolkien and George W. Bush read it.",
    "The U.S. Army and the U.K. Parliament met.",
    "It cost approx. twenty dollars, e.g. in Paris.",
    "Pi is about 3.14 and the loan was $1.5 million.",
    "The single reached No. 5 in c. 1985 and is shown in Fig. 3 here.",
])
def test_abbreviations_initials_and_decimals_end_no_sentence(text):
    assert sentences(text) == [text]


def test_a_dotted_acronym_or_company_suffix_ends_a_sentence_before_a_function_word():
    assert sentences("He moved to the U.S. The next year he left.") == ["He moved to the U.S.", "The next year he left."]
    assert sentences("She joined Apple Inc. It was 1990.") == ["She joined Apple Inc.", "It was 1990."]
    assert sentences("He led the U.S. Navy.") == ["He led the U.S. Navy."]


def test_a_sentence_ends_before_a_lower_case_word_only_never():
    assert sentences("He said \"no.\" and left. Then he came back.") == ["He said \"no.\" and left.",
                                                                          "Then he came back."]


def test_a_blank_line_ends_a_sentence_and_blank_text_has_none():
    assert sentences("A heading\n\nThe body starts here.") == ["A heading", "The body starts here."]
    assert sentences("") == [] and sentences("   \n ") == []
    assert sentences("no final stop") == ["no final stop"]


def test_words_keep_apostrophes_and_numbers_whole():
    assert words("O'Brien paid 1,200 for 3.5 well-known maps.") == ["O'Brien", "paid", "1,200", "for", "3.5", "well",
                                                                   "known", "maps"]


def test_content_words_drop_stopwords_and_possessives_and_lower_case():
    assert content_words("Were Scott Derrickson's films and Ed Wood of the same nationality?") == [
        "scott", "derrickson", "films", "ed", "wood", "nationality"]
    assert content_words("It's what they would have done in it.") == []
    assert content_words("Born in 1994, born twice.") == ["born", "1994", "born", "twice"]


def test_stopwords_are_lower_case_function_words():
    assert {"the", "of", "and", "which", "was", "that", "who"} <= STOPWORDS
    assert all(w == w.lower() for w in STOPWORDS)
    assert not {"paris", "film", "born", "planet"} & STOPWORDS


def test_the_share_of_words_is_the_share_of_the_wanted_texts_content_words_the_text_holds():
    assert share_of_words("Who directed the film Jaws?", "Jaws is a film by Spielberg.") == pytest.approx(2 / 3)
    assert share_of_words("Jaws film", "Jaws film Jaws film") == 1.0
    assert share_of_words("Jaws", "Alien") == 0.0
    assert share_of_words("the of which", "anything") == 0.0       # nothing wanted: nothing found
