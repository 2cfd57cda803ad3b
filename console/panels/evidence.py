"""Why an answer is what it is: the passages secure retrieval put in the context or kept out (with
their flags and notes), every generator's candidate with its claim checks, and the detail text
shown for whichever of them is selected.

Pure presentation: tables are RecordTableModels over engine values; the detail pane gets HTML.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from engine import AgentOutcome, Candidate, ChallengeOutcome, CheckReason, Chunk, ClaimOrigin, ContextChunk, PassageFlag, sentences

from .. import style
from ..table_model import CENTER, RIGHT, VALUE_ROLE, Column
from ..untrusted import html_text

CHALLENGE_WORDS = {ChallengeOutcome.PASSED: "passed", ChallengeOutcome.NO_REPLY: "failed: no reply",
                   ChallengeOutcome.QUOTE_NOT_CITED: "failed", ChallengeOutcome.QUOTE_DOES_NOT_BACK: "failed",
                   ChallengeOutcome.NOT_ASKED: "not asked"}

# A passage's status in the table and the detail pane.
IN_CONTEXT, KEPT_OUT = "in context", "kept out"
# At or above this support rate a candidate's claims count as backed by its evidence.
SUPPORTED_RATE = 0.8


@dataclass(frozen=True)
class PassageRow:
    """One passage of the answer's evidence: in the context or kept out of it."""
    passage: ContextChunk
    kept_out: bool

    @property
    def status(self) -> str:
        return KEPT_OUT if self.kept_out else IN_CONTEXT

    @property
    def flags(self) -> tuple[PassageFlag, ...]:
        return self.passage.explanation.flags if self.passage.explanation else ()

    @property
    def note(self) -> str:
        return self.passage.explanation.note if self.passage.explanation else ""


def passage_rows(context: Iterable[ContextChunk], excluded: Iterable[ContextChunk]) -> list[PassageRow]:
    """The context in the engine's order, then what was kept out: flagged passages first (the attacks),
    then the ones that merely lacked support, each group in the engine's order."""
    kept_out = [PassageRow(p, True) for p in excluded]
    return ([PassageRow(p, False) for p in context]
            + [r for r in kept_out if r.flags] + [r for r in kept_out if not r.flags])


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _explained(row: PassageRow, attribute: str, fmt) -> str:
    explanation = row.passage.explanation
    return "—" if explanation is None else fmt(getattr(explanation, attribute))


def flags_tooltip(flags: tuple[PassageFlag, ...]) -> str:
    return "\n".join(f"{flag.value}: {style.flag_meaning(flag)}" for flag in flags)


def agents_tooltip(row: PassageRow) -> str:
    lines = [f"returned this text: {', '.join(row.passage.supported_by) or 'no agent'}"]
    if row.passage.disputed_by:
        lines.append(f"returned another text under this id: {', '.join(row.passage.disputed_by)}")
    return "\n".join(lines)


PASSAGE_COLUMNS: tuple[Column[PassageRow], ...] = (
    Column("Status", lambda r: r.status, bold=lambda r: True,
           foreground=lambda r: style.tones().bad if r.kept_out else style.tones().good,
           tooltip=lambda r: ("kept out of the context: the generators never saw it" if r.kept_out
                              else "in the context the generators answered from")),
    Column("Flags", lambda r: ", ".join(r.flags), value=lambda r: r.flags, tooltip=lambda r: flags_tooltip(r.flags),
           header_tooltip="What secure retrieval found wrong with the passage (hover a row for the meaning)"),
    Column("Chunk", lambda r: r.passage.chunk.id, tooltip=lambda r: r.passage.chunk.id),
    Column("Support", lambda r: _explained(r, "support_share", _percent), align=RIGHT,
           header_tooltip="Share of the answering retrievers' (reputation-weighted) vote that returned this text"),
    Column("Returned by", lambda r: ", ".join(r.passage.supported_by) or "—", tooltip=agents_tooltip),
    Column("Title", lambda r: r.passage.chunk.title or "—",
           tooltip=lambda r: f"{r.passage.chunk.title}\n{r.passage.chunk.source}".strip()),
    Column("Score", lambda r: f"{r.passage.score:.3f}", align=RIGHT,
           header_tooltip="Rank score: votes weighted by the evidence behind the passage"),
    Column("Kinds", lambda r: _explained(r, "kinds", ", ".join),
           header_tooltip="Kinds of retriever that returned it: agreement across kinds counts for more"),
    Column("Metadata", lambda r: _explained(r, "metadata_confidence", lambda v: f"{v:.2f}"), align=RIGHT,
           header_tooltip="Metadata confidence (authority, freshness, position), 0 to 1"),
    Column("Note", lambda r: r.note, tooltip=lambda r: r.note),
)
PASSAGE_FLAGS_COLUMN = 1
PASSAGE_TITLE_COLUMN = 5
PASSAGE_NOTE_COLUMN = len(PASSAGE_COLUMNS) - 1


def kept_out_background(row: PassageRow):
    return style.tones().bad_tint if row.kept_out else None


def claims_summary(candidate: Candidate) -> str:
    supported = sum(check.supported for check in candidate.checks)
    return f"{supported} of {len(candidate.checks)}" if candidate.checks else "—"


def failing(candidate: Candidate) -> bool:
    return candidate.support_rate < SUPPORTED_RATE


CANDIDATE_COLUMNS: tuple[Column[Candidate], ...] = (
    Column("Agent", lambda c: c.agent_id, bold=lambda c: True),
    Column("Support", lambda c: f"{c.support_rate:.0%}", align=RIGHT, bold=lambda c: True,
           foreground=lambda c: style.tones().bad if failing(c) else style.tones().good,
           header_tooltip="Share of its claims that the passages it cites back"),
    Column("Claims backed", claims_summary, align=RIGHT),
    Column("Credibility", lambda c: f"{c.credibility:.2f}", align=RIGHT,
           header_tooltip="How far the engine trusts this candidate: support, agreement and the agent's reputation"),
    Column("Answers", lambda c: "—" if c.relevance is None else f"{c.relevance:.2f}", align=RIGHT,
           foreground=lambda c: style.tones().bad if c.off_topic else None,
           tooltip=lambda c: ("not read for meaning" if c.relevance is None else
                              ("does not answer the question" if c.off_topic else "answers the question")
                              + (f", {c.relevance_by}" if c.relevance_by else "")),
           header_tooltip="How likely its answer answers the question (the judge agents); "
                          "one that does not is never given"),
    Column("Agrees with", lambda c: ", ".join(c.agreeing) or "no one",
           foreground=lambda c: None if c.agreeing else style.tones().muted),
    Column("Challenge", lambda c: CHALLENGE_WORDS.get(c.challenge_outcome, "—"),
           foreground=lambda c: style.tones().bad if c.challenge_outcome and c.challenge_outcome.failed else
           (style.tones().good if c.challenge_outcome is ChallengeOutcome.PASSED else style.tones().muted),
           tooltip=lambda c: c.challenge or "not challenged: every claim was supported",
           header_tooltip="Asked to show the evidence for a doubtful claim: could it?"),
    Column("Answer", lambda c: c.generation.answer or "(no answer)", tooltip=lambda c: c.generation.answer),
)


def check_mark(supported: bool) -> str:
    return "✓" if supported else "✗"


CHECK_COLUMNS = (
    Column("", lambda k: check_mark(k.supported), align=CENTER, bold=lambda k: True,
           foreground=lambda k: style.tones().good if k.supported else style.tones().bad,
           tooltip=lambda k: "supported by its citations" if k.supported else "not supported",
           header_tooltip="Supported by the passages it cites"),
    Column("Verdict", lambda k: k.label.value.replace("_", " "), bold=lambda k: True,
           foreground=lambda k: style.tones().good if k.supported else style.tones().bad,
           header_tooltip="supported, refuted (the evidence says otherwise) or not enough evidence"),
    Column("Claim", lambda k: k.claim.text + ("" if k.origin is ClaimOrigin.DECLARED else "  (split from the answer)"),
           tooltip=lambda k: k.claim.text),
    Column("Coverage", lambda k: f"{k.coverage:.0%}", align=RIGHT,
           header_tooltip="Share of the claim's content words found in its cited passages"),
    Column("Reason", lambda k: k.reason, foreground=lambda k: None if k.supported else style.tones().bad,
           tooltip=lambda k: k.reason),
    Column("Cites", lambda k: ", ".join(k.claim.citations) or "—"),
)
CHECK_CLAIM_COLUMN, CHECK_REASON_COLUMN = 2, 4


class FlagChipsDelegate(QStyledItemDelegate):
    """Draws a cell's flags (VALUE_ROLE) as coloured chips; the DisplayRole text stays for copy and tests."""

    PAD_X, GAP, MARGIN = 6, 4, 6

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        flags = index.data(VALUE_ROLE) or ()
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""                              # background and selection only; the chips are the text
        widget = opt.widget
        (widget.style() if widget else QApplication.style()).drawControl(
            QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        if not flags:
            return
        font = self._chip_font(opt.font)
        metrics = QFontMetrics(font)
        height = metrics.height() + 2
        painter.save()
        painter.setClipRect(opt.rect)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(font)
        x = opt.rect.left() + self.MARGIN
        y = opt.rect.top() + (opt.rect.height() - height) / 2
        for flag in flags:
            width = metrics.horizontalAdvance(flag) + 2 * self.PAD_X
            chip = QRectF(x, y, width, height)
            background, text = style.flag_chip_colours(flag)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(background)
            painter.drawRoundedRect(chip, height / 2, height / 2)
            painter.setPen(text)
            painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, flag)
            x += width + self.GAP
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        flags = index.data(VALUE_ROLE) or ()
        if not flags:
            return base
        metrics = QFontMetrics(self._chip_font(option.font))
        width = (2 * self.MARGIN + sum(metrics.horizontalAdvance(f) + 2 * self.PAD_X for f in flags)
                 + self.GAP * (len(flags) - 1))
        return QSize(max(base.width(), width), max(base.height(), metrics.height() + 6))

    @staticmethod
    def _chip_font(base: QFont) -> QFont:
        font = QFont(base)
        font.setBold(True)
        font.setPointSizeF(base.pointSizeF() * 0.9)
        return font


# --- detail HTML -------------------------------------------------------------------------------
def flag_chips_html(flags: Iterable[PassageFlag]) -> str:
    chips = []
    for flag in flags:
        background, text = style.flag_chip_colours(flag)
        chips.append(f"<span style='{style.css_background(background)}; {style.css(text)}; font-weight:bold'>&nbsp;{html_text(flag.value)}&nbsp;</span>")
    return " ".join(chips)


def referenced_ids(note: str) -> list[str]:
    """Chunk ids a note points at, written as [id] by secure retrieval."""
    return re.findall(r"\[([^\[\]\s]+)\]", note)


def reference_passage(row: PassageRow, context: Iterable[ContextChunk]) -> ContextChunk | None:
    """For a kept-out passage: the in-context passage it copies (named in its note) or shares an id with."""
    if not row.kept_out:
        return None
    by_id = {c.chunk.id: c for c in context}
    for chunk_id in referenced_ids(row.note) + [row.passage.chunk.id]:
        found = by_id.get(chunk_id)
        if found is not None and found.chunk.text != row.passage.chunk.text:
            return found
    return None


def diff_html(original: str, changed: str) -> str:
    """`changed` word by word against `original`: removed words struck through, new ones highlighted."""
    old, new = original.split(), changed.split()
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html_text(" ".join(new[j1:j2])))
            continue
        if i2 > i1:
            out.append(f"<s style='{style.fg('muted')}'>{html_text(' '.join(old[i1:i2]))}</s>")
        if j2 > j1:
            out.append(f"<span style='{style.bg('highlight_tint')}; {style.fg('bad')}; font-weight:bold'>"
                       f"{html_text(' '.join(new[j1:j2]))}</span>")
    return " ".join(out)


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def section_html(section: str) -> str:
    """The headings above a passage (" › " between them), as a small muted line."""
    return f"<p style='{style.fg('muted')}; font-size:small; margin:0'>{html_text(section)}</p>" if section.strip() else ""


def passage_text_html(text: str, kind: str = "", section: str = "") -> str:
    """A passage set out as its document had it (engine.ingest's chunk metadata `kind` and `section`): the section
    above; code in a monospace block, its line breaks kept; a table one row per line; prose in paragraphs. Every
    piece is escaped: a passage is data, never markup or a link."""
    if kind == "code":
        family = re.sub(r"[\"'<>&;]", "", style.monospace_font().family())    # a font's name, made inert
        body = f"<pre style=\"white-space:pre-wrap; font-family:'{family}'\">{html_text(text)}</pre>"
    elif kind == "table":
        rows = [line for line in text.splitlines() if line.strip()]
        rows = rows if len(rows) > 1 else sentences(text)       # rows joined by spaces: one per sentence
        body = "<p>" + "<br>".join(html_text(row.strip()) for row in rows) + "</p>"
    else:
        body = "".join(f"<p>{html_text(' '.join(paragraph.split()))}</p>"
                       for paragraph in _PARAGRAPH_BREAK.split(text) if paragraph.strip())
    return section_html(section) + body


def chunk_text_html(chunk: Chunk) -> str:
    """A chunk's text by passage_text_html; its metadata comes from an agent, so only known kinds count."""
    meta = chunk.metadata
    return passage_text_html(chunk.text, str(meta.get("kind") or ""), str(meta.get("section") or ""))


def passage_html(row: PassageRow, reference: ContextChunk | None = None) -> str:
    chunk, explanation = row.passage.chunk, row.passage.explanation
    colour = style.tones().bad.name() if row.kept_out else style.tones().good.name()
    parts = [f"<h3 style='margin:0'>{html_text(chunk.title or chunk.id)}</h3>",
             f"<p style='{style.fg('muted')}; margin-top:4px'>Source: {html_text(chunk.source or 'unknown')}"
             f"<br>Chunk: <code>{html_text(chunk.id)}</code></p>",
             f"<p><b style='color:{colour}'>{row.status.upper()}</b> {flag_chips_html(row.flags)}"]
    if row.note:
        parts.append(f"<br><b>Why:</b> {html_text(row.note)}")
    parts.append("</p>")
    if reference is not None:
        parts.append(section_html(str(chunk.metadata.get("section") or "")))
        parts.append(f"<p style='{style.fg('muted')}'>Changes from the text in context "
                     f"(<s>original</s> <span style='{style.bg('highlight_tint')}; {style.fg('bad')}'>edited</span>):</p>"
                     f"<p>{diff_html(reference.chunk.text, chunk.text)}</p>")
    else:
        parts.append(chunk_text_html(chunk))
    facts = [f"returned by {html_text(', '.join(row.passage.supported_by) or 'no agent')}"]
    if row.passage.disputed_by:
        facts.append(f"other text under this id from {html_text(', '.join(row.passage.disputed_by))}")
    if explanation is not None:
        facts += [f"support {explanation.support_share:.0%}", f"votes {explanation.votes:.4f}",
                  f"score {row.passage.score:.4f}", f"kinds {html_text(', '.join(explanation.kinds) or '—')}",
                  f"metadata confidence {explanation.metadata_confidence:.2f}",
                  f"query similarity {explanation.query_similarity:.2f}",
                  f"cluster {explanation.cluster if explanation.cluster >= 0 else 'none'}"]
    else:
        facts.append(f"score {row.passage.score:.4f}")
    parts.append(f"<p style='{style.fg('muted')}'>{' · '.join(facts)}</p>")
    return "".join(parts)


def _by(candidate: Candidate) -> str:
    return f", {html_text(candidate.relevance_by)}" if candidate.relevance_by else ""


def candidate_html(candidate: Candidate) -> str:
    generation = candidate.generation
    colour = style.tones().bad.name() if failing(candidate) else style.tones().good.name()
    parts = [f"<h3 style='margin:0'>{html_text(candidate.agent_id)}</h3>",
             f"<p style='{style.fg('muted')}; margin-top:4px'>support <b style='color:{colour}'>{candidate.support_rate:.0%}</b>"
             f" · claims backed {claims_summary(candidate)} · credibility {candidate.credibility:.2f}"
             f" · confidence {generation.confidence:.2f}"
             f" · agrees with {html_text(', '.join(candidate.agreeing) or 'no one')}"
             + ("" if candidate.relevance is None else
                f" · <b style='color:{style.tones().bad.name()}'>does not answer the question</b>"
                f" (P = {candidate.relevance:.2f}{_by(candidate)})" if candidate.off_topic else
                f" · answers the question (P = {candidate.relevance:.2f}{_by(candidate)})") + "</p>",
             f"<p style='white-space:pre-wrap'>{html_text(generation.answer or '(no answer)')}</p>"]
    if generation.reasoning:
        parts.append("<p><b>Reasoning</b></p><ul>" + "".join(f"<li>{html_text(step)}</li>" for step in generation.reasoning)
                     + "</ul>")
    if candidate.checks:
        parts.append(f"<p style='{style.fg('muted')}'>Select a claim to read the passages it cites.</p>")
    return "".join(parts)


def claim_check_html(check, passages: Mapping[str, PassageRow]) -> str:
    colour = style.tones().good.name() if check.supported else style.tones().bad.name()
    verdict = "SUPPORTED" if check.supported else "NOT SUPPORTED"
    parts = [f"<p style='font-size:large; margin:0'>{html_text(check.claim.text)}</p>",
             f"<p><b style='color:{colour}'>{check_mark(check.supported)} {verdict}</b>"
             f" · coverage {check.coverage:.0%}" + (f" · {html_text(check.reason)}" if check.reason else "") + "</p>"]
    if check.entailment is not None:
        parts.append(f"<p>Meaning: entailed P = <b>{check.entailment:.2f}</b>, read against "
                     f"“{html_text(check.premise)}”</p>")
    if not check.claim.citations:
        parts.append(f"<p style='{style.fg('muted')}'>The claim cites no passage.</p>")
    for chunk_id in check.claim.citations:
        row = passages.get(chunk_id)
        if row is None:
            parts.append(f"<p><b>[{html_text(chunk_id)}]</b> <span style='color:{style.tones().bad.name()}'>"
                         f"was not among the passages the fleet retrieved</span></p>")
            continue
        where = ("<span style='color:%s'>kept out</span>" % style.tones().bad.name()) if row.kept_out else "in context"
        parts.append(f"<p><b>[{html_text(chunk_id)}]</b> {html_text(row.passage.chunk.title)} — {where}</p>"
                     + chunk_text_html(row.passage.chunk))
    return "".join(parts)


def outcome_html(outcome: AgentOutcome) -> str:
    colour = style.call_status_colour(outcome.status).name()
    parts = [f"<h3 style='margin:0'>{html_text(outcome.agent_id)}</h3>",
             f"<p style='{style.fg('muted')}; margin-top:4px'>{outcome.role.value} · "
             f"<b style='color:{colour}'>{outcome.status.value}</b> · {outcome.latency_ms:,.0f} ms"
             f" · {outcome.n_items} item(s)" + (f" · reply form {html_text(outcome.mode)}" if outcome.mode else "") + "</p>"]
    if outcome.error:
        parts.append(f"<p style='white-space:pre-wrap; color:{style.tones().bad.name()}'>{html_text(outcome.error)}</p>")
    return "".join(parts)


def passages_by_id(rows: Iterable[PassageRow]) -> dict[str, PassageRow]:
    """First row per chunk id, context before kept out (a claim cites the context's copy)."""
    found: dict[str, PassageRow] = {}
    for row in rows:
        found.setdefault(row.passage.chunk.id, row)
    return found
