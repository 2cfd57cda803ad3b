import pytest

from engine import ConfigError
from engine.ingest.corpus import load_corpus

from ..conftest import TEST_CORPUS


def test_test_corpus_loads_with_metadata():
    corpus = load_corpus(TEST_CORPUS)
    chunk = next(c for c in corpus.chunks if c.id == "mars-moons#0")
    assert chunk.source == "Planetary Science Encyclopedia"
    assert chunk.metadata["authority"] == 0.9
    assert chunk.metadata["date"] == "2020-03-01"
    assert chunk.title == "Moons of Mars"
    assert "Phobos" in chunk.text


def test_plain_text_file_gets_defaults_and_long_text_is_split(tmp_path):
    (tmp_path / "notes.txt").write_text(("Word " * 30 + "end. ") * 12)
    corpus = load_corpus(tmp_path)
    assert len(corpus.chunks) > 1
    assert all(len(c.text.split()) <= 170 for c in corpus.chunks)
    assert corpus.chunks[0].metadata["authority"] == 0.5
    assert corpus.chunks[0].title == "notes"


def test_bad_authority_names_file_and_key(tmp_path):
    (tmp_path / "a.md").write_text("---\ntitle: A\nauthority: very\n---\nSome text here.\n")
    with pytest.raises(ConfigError) as info:
        load_corpus(tmp_path)
    assert info.value.key == "authority"
    assert info.value.file.endswith("a.md")


def test_unclosed_front_matter(tmp_path):
    (tmp_path / "b.md").write_text("---\ntitle: B\nSome text.\n")
    with pytest.raises(ConfigError, match="no closing"):
        load_corpus(tmp_path)


def test_fingerprint_changes_when_a_file_changes(tmp_path):
    (tmp_path / "a.md").write_text("Mars has two moons.\n")
    before = load_corpus(tmp_path).fingerprint
    (tmp_path / "a.md").write_text("Mars has two small moons.\n")
    assert load_corpus(tmp_path).fingerprint != before


def test_empty_folder_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="no .md, .txt, .html, .htm or .pdf files"):
        load_corpus(tmp_path)
