"""A cited passage is shown as its document set it out (engine.ingest's chunk metadata `kind` and `section`):
code monospace with its line breaks, a table one row per line, prose in paragraphs, the section above; and
whatever the passage says stays plain text, never markup or a link."""
from __future__ import annotations

from PySide6.QtGui import QFont, QFontInfo, QFontMetricsF, QTextDocument

from console import style
from console.panels.answer import AnswerView
from console.panels.evidence import passage_text_html
from engine import Chunk, Citation, ContextChunk

from .answers import make_answer

CODE = "pip install quorum\nquorum --help\n    --corpus DIR"
HOSTILE = "Run <b>x</b> then <a href='https://evil.example'>click here</a> & <script>alert(1)</script>."


def document(html: str) -> QTextDocument:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc


def fragments(doc: QTextDocument):
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            yield block, it.fragment()
            it += 1
        block = block.next()


def advances(font: QFont, text: str) -> set[float]:
    """The widths of text's characters in font, as the view lays them out (not what the font file claims)."""
    metrics = QFontMetricsF(font)
    return {metrics.horizontalAdvance(ch) for ch in text}


def cited_view(qtbot, chunk: Chunk, citation: Citation | None = None, in_context: bool = True) -> AnswerView:
    view = AnswerView()
    qtbot.addWidget(view)
    citation = citation or Citation(chunk.id, chunk.source, chunk.title, chunk.text)
    context = (ContextChunk(chunk, 0.04, ("ret-a",)),) if in_context else ()
    view.show_answer(make_answer(citations=(citation,), context=context, excluded=(), candidates=()))
    return view


def test_a_code_passage_is_monospace_with_its_line_breaks(qtbot):
    chunk = Chunk("readme#install-0", CODE, "README.md", metadata={"title": "Quorum", "kind": "code",
                                                                  "section": "Quorum › Install"})
    view = cited_view(qtbot, chunk)
    shown = view.detail.toPlainText()
    assert CODE in shown                                    # every line break and the indent kept
    by_text = {fragment.text(): fragment.charFormat() for _, fragment in fragments(view.detail.document())}
    for line in CODE.splitlines():                          # each line set in the console's monospace font
        assert style.monospace_font().family() in by_text[line].fontFamilies()
        assert len(advances(by_text[line].font(), line)) == 1   # as drawn: every character one advance wide
    source = next(fmt for text, fmt in by_text.items() if text.startswith("Source: README.md"))
    assert style.monospace_font().family() not in (source.fontFamilies() or [])   # the rest of the pane is not
    drawn_in = QFontInfo(source.font()).family()            # on a machine with no other font, the code font
    if drawn_in not in ("", style.monospace_font().family()):
        assert len(advances(source.font(), "Source: README.md")) > 1


def test_the_section_path_is_a_line_above_the_passage(qtbot):
    chunk = Chunk("readme#usage-0", "Ask a question in the console.", "README.md",
                  metadata={"title": "Quorum", "kind": "prose", "section": "Quorum › Usage"})
    shown = cited_view(qtbot, chunk).detail.toPlainText()
    assert "Quorum › Usage\nAsk a question in the console." in shown


def test_a_citation_outside_the_context_carries_its_own_kind_and_section(qtbot):
    chunk = Chunk("readme#install-0", CODE, "README.md", metadata={"title": "Quorum"})
    citation = Citation(chunk.id, chunk.source, "Quorum", CODE, kind="code", section="Quorum › Install")
    view = cited_view(qtbot, chunk, citation, in_context=False)
    assert f"Quorum › Install\n{CODE}" in view.detail.toPlainText()


def test_passage_and_section_text_is_shown_literally_never_as_markup_or_a_link(qtbot):
    chunk = Chunk("evil#0", HOSTILE, "forum", metadata={"title": "<i>t</i>", "kind": "prose",
                                                       "section": "<b>Setup</b> › <a href='x'>y</a>"})
    view = cited_view(qtbot, chunk)
    shown = view.detail.toPlainText()
    assert HOSTILE in shown and "<b>Setup</b> › <a href='x'>y</a>" in shown
    doc = view.detail.document()
    assert not any(f.charFormat().isAnchor() for _, f in fragments(doc))
    assert not any(f.charFormat().fontWeight() > 500 and f.text() == "x" for _, f in fragments(doc))
    for kind in ("code", "table", "prose", ""):
        html = passage_text_html(HOSTILE, kind, "<b>s</b>")
        assert "<b>x</b>" not in html and "<a href" not in html and "<script>" not in html and "<b>s</b>" not in html


def test_a_table_shows_one_row_per_line_and_prose_keeps_its_paragraphs():
    rows = document(passage_text_html("Tool: Atlas; Licence: MIT. Tool: Borealis; Licence: GPL.", "table"))
    assert rows.toPlainText() == "Tool: Atlas; Licence: MIT.\nTool: Borealis; Licence: GPL."
    assert rows.blockCount() == 1                           # rows of one table: line breaks, not paragraphs
    prose = document(passage_text_html("First block of the passage.\n\nSecond block,\nwrapped.", "prose"))
    assert prose.blockCount() == 2
    assert [prose.findBlockByNumber(i).text() for i in range(2)] == ["First block of the passage.",
                                                                    "Second block, wrapped."]
