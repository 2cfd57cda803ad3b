"""eval documents (issue #14): the corpora it writes, how it judges an answer, and what it counts as markup."""
from __future__ import annotations

from email.message import Message

import numpy as np

from bench.evaluation.data import Passage
from bench.evaluation.documents import Ask, Asked, has_markup, judge, summarise_corpus, summary_overlap
from bench.evaluation.documents_corpus import installed_packages, write_hotpot, write_packages
from bench.evaluation.generation import Question
from engine.ingest.corpus import load_corpus

README = "# Requests\n\n[![badge](https://x/b.svg)](https://x)\n\nRequests is an elegant and simple HTTP library.\n" * 3


class FakeDistribution:
    def __init__(self, name: str, summary: str, body: str, content_type: str = "text/markdown") -> None:
        self.metadata = Message()
        for key, value in (("Name", name), ("Summary", summary), ("Description-Content-Type", content_type)):
            if value:
                self.metadata[key] = value
        self.metadata.set_payload(body)


def test_only_distributions_with_a_summary_and_a_markdown_readme_become_documents(tmp_path):
    found = installed_packages([
        FakeDistribution("requests", "Python HTTP for Humans.", README),
        FakeDistribution("Requests", "a second copy of the same name", README),
        FakeDistribution("plain", "Restructured text", README, content_type="text/x-rst"),
        FakeDistribution("nosummary", "", README),
        FakeDistribution("tiny", "Too short to read", "# Tiny\n"),
        FakeDistribution("quorum", "this very project", README),
    ])
    assert [(p.name, p.summary) for p in found] == [("requests", "Python HTTP for Humans.")]
    assert found[0].question == "What is requests for?"
    write_packages(tmp_path, found)
    chunks = load_corpus(tmp_path).chunks
    assert chunks and all("badge" not in c.text and "](" not in c.text for c in chunks)


def test_hotpot_paragraphs_become_one_file_per_title_with_the_title_kept(tmp_path):
    questions = [Question("q1", "Who?", ("Ann",), (Passage("q1/p0", "Ed Wood (film)", "Ed Wood is a film."),
                                                    Passage("q1/p1", "Ed Wood/film", "Another title, one name."))),
                 Question("q2", "What?", ("x",), (Passage("q2/p0", "Ed Wood (film)", "The same title again."),))]
    assert write_hotpot(tmp_path, questions) == 2
    titles = sorted(c.title for c in load_corpus(tmp_path).chunks)
    assert titles == ["Ed Wood (film)", "Ed Wood/film"]


def test_markup_is_what_markdown_or_html_leaves_in_an_answer():
    for text in ("<h1>HippoRAG</h1>", "## Installation", "Run `pip install x`.", "![logo](a.png)",
                 "See [docs](https://x).", "| a | b |\n|---|---|", "**Bold** claim.", "- a list item", "├── src"):
        assert has_markup(text), text
    for text in ("HippoRAG is a framework for long-term memory.", "It costs 3 < 4 dollars - or so.",
                 "Version 2.0 (2024) adds graphs."):
        assert not has_markup(text), text


def test_summary_overlap_is_the_share_of_the_summary_content_words():
    assert summary_overlap("Requests is a simple HTTP library for humans.", "Python HTTP for Humans.") == 0.667
    assert summary_overlap("", "Python HTTP for Humans.") == 0.0


def _asked(corpus, qid, gold, answer, verdict="answered", run="warm", ms=100.0):
    return Asked(Ask(corpus, qid, f"What is {qid} for?", (gold,)), run, verdict, answer, ms, {}, ())


def test_a_package_answer_is_ok_by_content_words_or_by_its_nearest_summary_and_never_when_not_given():
    summaries = {"a": "Python HTTP for Humans.", "b": "Fast numerical arrays.", "c": "Terminal colours."}
    answers = {"a": "An elegant HTTP library.", "b": "NumPy is the fundamental package for numerical arrays.",
               "c": "It prints text."}
    vectors = {summaries["a"]: np.array([1.0, 0, 0]), summaries["b"]: np.array([0, 1.0, 0]),
               summaries["c"]: np.array([0, 0, 1.0]),
               answers["a"]: np.array([0.9, 0.1, 0]), answers["b"]: np.array([0.1, 0.9, 0]),
               answers["c"]: np.array([0.8, 0, 0.2])}
    asked = [_asked("packages", k, summaries[k], answers[k], run=run, ms=ms)
             for k in "abc" for run, ms in (("cold", 300.0), ("warm", 100.0))]
    asked.append(_asked("packages", "d", "Never answered.", "", verdict="abstained"))
    rows = {r.id: r for r in judge(asked, vectors)}
    assert rows["a"].nearest_own and rows["a"].answer_ok and rows["a"].overlap < 0.5     # by its nearest Summary
    assert rows["b"].overlap >= 0.5 and rows["b"].answer_ok                              # by content words
    assert not rows["c"].nearest_own and not rows["c"].answer_ok
    assert not rows["d"].answer_ok and rows["d"].overlap == 0.0
    assert (rows["a"].cold_ms, rows["a"].warm_ms) == (300.0, 100.0)
    summary = summarise_corpus(list(rows.values()), {"files": 4, "passages": 9, "index_s": 1.0, "skipped": []})
    assert summary["answer_ok_rate"] == 0.5 and summary["abstention_rate"] == 0.25 and summary["markup_rate"] == 0.0


def test_a_hotpot_answer_is_right_when_it_contains_the_gold_answer_and_markup_is_counted_only_when_given():
    import dataclasses
    asked = [_asked("hotpotqa", "q1", "Ann Lee", "It was Ann Lee."),
             dataclasses.replace(_asked("hotpotqa", "q2", "Ann Lee", "Bob."), blocked_corpus=("bib#0",)),
             _asked("hotpotqa", "q3", "Ann Lee", "## Ann Lee", verdict="abstained")]
    rows = {r.id: r for r in judge(asked)}
    assert rows["q1"].correct and not rows["q2"].correct and not rows["q3"].correct
    assert not rows["q3"].markup
    summary = summarise_corpus(list(rows.values()), {"files": 1, "passages": 1, "index_s": 0.1})
    assert summary["accuracy"] == 0.3333
    assert summary["corpus_blocked_question_rate"] == 0.3333 and summary["corpus_passages_blocked"] == ["bib#0"]


def test_the_report_keeps_the_rows_apart_and_shows_failures_per_split(tmp_path):
    import json

    from bench.evaluation.documents_report import markdown, write_outputs
    asked = [_asked("packages", "a", "Python HTTP for Humans.", "## Install"),
             _asked("packages", "b", "Fast arrays.", "", verdict="abstained")]
    rows = judge(asked, {})
    part = summarise_corpus(rows, {"files": 2, "passages": 3, "index_s": 1.0, "skipped": [
        {"path": "blob.md", "reason": "binary"}]})
    result = {"packages": part, "rows": [r.to_json() for r in rows]}
    paths = write_outputs(result, tmp_path / "documents.json")
    assert "rows" not in json.loads(paths[0].read_text()) and len(paths[1].read_text().splitlines()) == 2
    text = markdown(result)
    assert "Answers with markup (1)" in text and "Packages abstained on (1)" in text and "blob.md: binary" in text
    assert part["markup_rate"] == 0.5 and set(part["by_split"]) == {"dev", "test"}
