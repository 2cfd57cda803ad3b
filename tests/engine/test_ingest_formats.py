"""Your own documents (issue #14), formats: HTML pages read as a reader sees them, PDF text with pypdf, and a PDF
that cannot be read skipped with its reason while the other files load."""
from __future__ import annotations

import io
import logging

from hypothesis import given, settings
from hypothesis import strategies as st
from pypdf import PdfReader, PdfWriter

from engine.ingest.corpus import load_corpus
from engine.ingest.html_page import read_page
from engine.ingest.markdown import BlockKind
from engine.ingest.passages import passages
from engine.ingest.pdf import MAX_PDF_BYTES, paragraphs, read_pdf

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Quorum &amp; its Agents</title>
<style>p { color: red }</style><script>document.write("<p>injected</p>")</script></head>
<body>
<header><a href="/">Home</a> Site banner</header>
<nav><ul><li><a href="/docs">Docs</a></li><li>Blog</li></ul></nav>
<main><article>
<header><h1>Guide to <em>Quorum</em></h1></header>
<p>Quorum is an operations <a href="https://example.org/console">console</a> for   RAG
agents that may lie.<img src="badge.svg" alt="build passing"></p>
<!-- a note for the editors -->
Text outside any block.
<h2>Install</h2>
<pre><code class="language-sh">pip install quorum
quorum --help
</code></pre>
<p><code>make run</code></p>
<p>Run <code>make</code> and wait.</p>
<h3>Options</h3>
<table><thead><tr><th>Option</th><th>Meaning</th></tr></thead>
<tbody><tr><td>--db</td><td>the <b>database</b> file</td></tr><tr><td>--corpus</td><td>a folder</td></tr></tbody>
</table>
<h2>Answers</h2>
<ul><li>Each answer cites its passages.</li><li>Claims are checked.</li></ul>
<noscript>Please enable JavaScript.</noscript><svg><text>logo</text></svg>
<form><label>Email</label><input name="e"><button>Subscribe</button></form>
</article></main>
<footer>Copyright 2024 Example</footer>
</body></html>
"""


def pdf_bytes(pages: list[list[str]], title: str | None = None, padding: int = 0) -> bytes:
    """A minimal PDF: each page's lines in Helvetica, one under the other, with the xref offsets it needs (and
    `padding` bytes of comment, to make it large)."""
    def literal(text: str) -> str:
        return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"

    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        stream = "BT /F1 12 Tf 14 TL 72 720 Td " + " T* ".join(f"{literal(line)} Tj" for line in lines) + " ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R "
                       "/Resources << /Font << /F1 3 0 R >> >> >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    if title:
        objects.append(f"<< /Title {literal(title)} >>")
    out = bytearray(b"%PDF-1.4\n" + (b"%" + b"x" * padding + b"\n" if padding else b""))
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    info = f" /Info {len(objects)} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


MANUAL = pdf_bytes([["Quorum keeps a fleet of retrieval agents hon-", "est by checking every claim against the",
                     "passages the agents cite."],
                    ["The second page says that answers are given only when a quorum agrees."]],
                   title="The Quorum Manual")


def encrypted(pdf: bytes) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_an_html_page_is_read_as_a_reader_sees_it():
    page = read_page(PAGE)
    assert page.title == "Quorum & its Agents"
    guide, install, options = ("Guide to Quorum",), ("Guide to Quorum", "Install"), ("Guide to Quorum", "Install",
                                                                                    "Options")
    assert [(b.kind, b.text, b.section) for b in page.blocks] == [
        (BlockKind.PROSE, "Quorum is an operations console for RAG agents that may lie.", guide),
        (BlockKind.PROSE, "Text outside any block.", guide),
        (BlockKind.CODE, "pip install quorum\nquorum --help", install),
        (BlockKind.CODE, "make run", install),
        (BlockKind.PROSE, "Run make and wait.", install),
        (BlockKind.TABLE, "Option: --db; Meaning: the database file.", options),
        (BlockKind.TABLE, "Option: --corpus; Meaning: a folder.", options),
        (BlockKind.PROSE, "Each answer cites its passages.", ("Guide to Quorum", "Answers")),
        (BlockKind.PROSE, "Claims are checked.", ("Guide to Quorum", "Answers")),
    ]
    everything = " ".join(b.text for b in page.blocks)
    for chrome in ("injected", "color", "Site banner", "Docs", "build passing", "editors", "JavaScript", "logo",
                   "Subscribe", "Email", "Copyright", "<", "&amp;"):
        assert chrome not in everything


def test_a_page_header_inside_the_content_is_kept_but_the_site_banner_is_not():
    page = read_page("<header><h1>Site</h1></header><section><header><h2>Chapter</h2><p>Byline.</p></header>"
                     "<p>Body.</p></section>")
    assert [(b.text, b.section) for b in page.blocks] == [("Byline.", ("Chapter",)), ("Body.", ("Chapter",))]


def test_broken_html_still_yields_its_text():
    page = read_page("<html><body><h2>Notes<p>First <b>bold <i>point<li>an item<div>loose <table><tr><td>a<td>b"
                     "<tr><td>c</table> tail &copy &#x1F600; </p></p></div></span><pre>x = 1\n  y")
    assert [(b.kind, b.text, b.section) for b in page.blocks] == [
        (BlockKind.PROSE, "First bold point", ("Notes",)),
        (BlockKind.PROSE, "an item", ("Notes",)),
        (BlockKind.PROSE, "loose", ("Notes",)),
        (BlockKind.TABLE, "a; b.", ("Notes",)),
        (BlockKind.TABLE, "c.", ("Notes",)),
        (BlockKind.PROSE, "tail © 😀", ("Notes",)),
        (BlockKind.CODE, "x = 1\n  y", ("Notes",)),
    ]
    assert read_page("").blocks == () and read_page("<script>never closed").blocks == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["<p>", "</p>", "<h2>", "</h2>", "<table>", "<tr>", "<td>", "</table>", "<pre>",
                                 "</pre>", "<code>", "</code>", "<nav>", "</nav>", "<header>", "</header>",
                                 "<section>", "<script>", "</script>", "<!--", "-->", "<![CDATA[", "&", "&#",
                                 "<", ">", "word", " ", "\n", "<br>", "<li>", "<img src=x>", "<title>"]),
                max_size=60).map("".join))
def test_no_html_crashes_the_reader(page):
    for part in passages(read_page(page).blocks):
        assert part.text.strip() and part.key


def test_passage_ids_and_sections_of_a_page_and_its_title(tmp_path):
    (tmp_path / "guide.html").write_text(PAGE)
    chunks = load_corpus(tmp_path).chunks
    assert [(c.id, c.metadata["kind"], c.metadata.get("section")) for c in chunks] == [
        ("guide#guide-to-quorum-0", "prose", "Guide to Quorum"),
        ("guide#install-0", "code", "Guide to Quorum › Install"),
        ("guide#install-1", "code", "Guide to Quorum › Install"),
        ("guide#install-2", "prose", "Guide to Quorum › Install"),
        ("guide#options-0", "prose", "Guide to Quorum › Install › Options"),
        ("guide#answers-0", "prose", "Guide to Quorum › Answers"),
    ]
    assert {c.title for c in chunks} == {"Quorum & its Agents"}


def test_a_page_declared_latin1_is_read_and_an_undeclared_one_is_skipped(tmp_path):
    (tmp_path / "declared.htm").write_bytes('<meta charset="ISO-8859-1"><p>Caf\xe9 cr\xe8me, 5\x80.</p>'
                                            .encode("latin-1"))
    (tmp_path / "undeclared.html").write_bytes("<p>Caf\xe9</p>".encode("latin-1"))
    corpus = load_corpus(tmp_path)
    assert [c.text for c in corpus.chunks] == ["Café crème, 5€."]
    assert [(s.path, s.reason.split(" (")[0]) for s in corpus.skipped] == [("undeclared.html", "not UTF-8 text")]


def test_pdf_text_becomes_prose_with_hyphenated_and_soft_line_breaks_joined():
    manual = read_pdf(MANUAL)
    assert manual.title == "The Quorum Manual"
    assert [(b.kind, b.text) for b in manual.blocks] == [
        (BlockKind.PROSE, "Quorum keeps a fleet of retrieval agents honest by checking every claim against the "
                          "passages the agents cite."),
        (BlockKind.PROSE, "The second page says that answers are given only when a quorum agrees."),
    ]
    assert paragraphs("One para-\ngraph, two\nlines.\n\n  \nA second.\n\n42\n\nX-\nRay and 1-\n2.") == [
        "One paragraph, two lines.", "A second.", "X- Ray and 1- 2."]


def test_a_pdf_title_that_is_a_file_name_is_no_title():
    assert read_pdf(pdf_bytes([["Some text."]], title="Microsoft Word - draft3.docx")).title == ""
    assert read_pdf(pdf_bytes([["Some text."]])).title == ""


def test_pdfs_that_cannot_be_read_are_skipped_with_their_reason_and_the_rest_load(tmp_path):
    (tmp_path / "manual.pdf").write_bytes(MANUAL)
    (tmp_path / "locked.pdf").write_bytes(encrypted(MANUAL))
    (tmp_path / "garbage.pdf").write_bytes(b"%PDF-1.4\n\x00\x01 this is no PDF at all")
    (tmp_path / "scan.pdf").write_bytes(pdf_bytes([[""], [""]]))
    corpus = load_corpus(tmp_path)
    reasons = {s.path: s.reason for s in corpus.skipped}
    assert reasons["locked.pdf"] == "PDF: encrypted (a password is needed)"
    assert reasons["scan.pdf"] == "PDF: no extractable text (scanned images?)"
    assert reasons["garbage.pdf"].startswith("PDF: unreadable (") and len(reasons) == 3
    assert [c.id for c in corpus.chunks] == ["manual#0"]
    assert corpus.chunks[0].title == "The Quorum Manual" and corpus.chunks[0].metadata["kind"] == "prose"


def test_a_flawed_pdf_is_read_without_pypdf_warnings_in_the_log(caplog):
    flawed = MANUAL.replace(b"startxref\n", b"startxref\n9")      # a wrong offset: pypdf rebuilds the xref
    with caplog.at_level(logging.WARNING):
        assert read_pdf(flawed).title == "The Quorum Manual"
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    assert logging.getLogger("pypdf").level == logging.NOTSET         # quiet only while it reads


def test_a_pdf_larger_than_a_text_file_may_be_is_still_read(tmp_path):
    (tmp_path / "big.pdf").write_bytes(pdf_bytes([["A page of text."]], padding=2_500_000))
    assert [c.id for c in load_corpus(tmp_path).chunks] == ["big#0"]
    (tmp_path / "huge.pdf").write_bytes(b"%PDF-1.4\n%" + b"x" * MAX_PDF_BYTES)
    assert [s.reason for s in load_corpus(tmp_path).skipped] == [f"larger than {MAX_PDF_BYTES:,} bytes"]


def test_a_folder_of_markdown_html_and_pdf_gives_passages_from_all_three(tmp_path):
    (tmp_path / "readme.md").write_text("---\ntitle: The Readme\n---\n# Quorum\n\nQuorum is a console.\n\n"
                                        "```sh\nmake run\n```\n")
    (tmp_path / "guide.html").write_text(PAGE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "manual.pdf").write_bytes(MANUAL)
    corpus = load_corpus(tmp_path)
    assert not corpus.skipped
    by_doc: dict[str, list] = {}
    for chunk in corpus.chunks:
        by_doc.setdefault(chunk.metadata["doc_id"], []).append(chunk)
    assert set(by_doc) == {"readme", "guide", "docs/manual"}
    assert {c.title for c in by_doc["readme"]} == {"The Readme"}
    assert [(c.id, c.metadata["kind"], c.metadata["section"]) for c in by_doc["readme"]] == [
        ("readme#quorum-0", "prose", "Quorum"), ("readme#quorum-1", "code", "Quorum")]
    assert {c.title for c in by_doc["guide"]} == {"Quorum & its Agents"}
    assert {c.metadata["kind"] for c in by_doc["guide"]} == {"prose", "code"}
    assert [(c.id, c.title, c.metadata["kind"], "section" in c.metadata) for c in by_doc["docs/manual"]] == [
        ("docs/manual#0", "The Quorum Manual", "prose", False)]
    assert "honest by checking" in by_doc["docs/manual"][0].text
