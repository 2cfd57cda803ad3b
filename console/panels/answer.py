"""How one answer is shown: verdict badge, answer, reason, suspected agents, the stages it went through (and
what the cascade monitor did, when it fired) and trace id above; below,
the evidence in tabs (citations, the passages in context and kept out, every generator's candidate
with its claim checks, what each agent did) beside one detail pane for whatever is selected."""
from __future__ import annotations

from collections import defaultdict

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QFrame, QGroupBox, QHBoxLayout, QHeaderView, QListWidget,
                               QListWidgetItem, QScrollArea, QSplitter, QTableView, QTabWidget, QToolButton,
                               QVBoxLayout, QWidget)

from engine import (AgentOutcome, Answer, CallStatus, Candidate, Citation, MeaningStatus, Verdict, needs_review,
                    participation_summary)

from .. import style
from ..stage_text import outcome_text, stage_chain
from ..layout import read_only_table
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import PlainLabel, RichLabel, SafeBrowser, cell, html_text, tooltip
from .evidence import (CANDIDATE_COLUMNS, CHECK_CLAIM_COLUMN, CHECK_COLUMNS, CHECK_REASON_COLUMN, PASSAGE_COLUMNS, PASSAGE_FLAGS_COLUMN,
                       PASSAGE_NOTE_COLUMN, PASSAGE_TITLE_COLUMN, FlagChipsDelegate, PassageRow, candidate_html, claim_check_html, failing,
                       kept_out_background, outcome_html, passage_html, passage_rows, passage_text_html,
                       passages_by_id, reference_passage)

OUTCOME_COLUMNS: tuple[Column[AgentOutcome], ...] = (
    Column("Agent", lambda o: o.agent_id, bold=lambda o: True),
    Column("Role", lambda o: o.role.value),
    Column("Status", lambda o: o.status.value, foreground=lambda o: style.call_status_colour(o.status),
           bold=lambda o: True),
    Column("Latency (ms)", lambda o: f"{o.latency_ms:,.0f}", align=RIGHT),
    Column("Items", lambda o: str(o.n_items), align=RIGHT),
    Column("Reply form", lambda o: o.mode, foreground=lambda o: style.tones().muted,
           header_tooltip="An LLM agent's reply form: how its server was given the reply's JSON Schema (json-schema, "
                          "json-object-schema, ollama), or json-object when it would not take one"),
    Column("Error", lambda o: o.error or "", foreground=lambda o: style.tones().bad, tooltip=lambda o: o.error),
)


def _boxed(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(widget)
    return box


def citation_label(citation: Citation) -> str:
    title = citation.title or citation.chunk_id
    return f"{title} — {citation.source}" if citation.source else title


def citation_html(citation: Citation) -> str:
    return (f"<h3 style='margin:0'>{html_text(citation.title or citation.chunk_id)}</h3>"
            f"<p style='{style.fg('muted')}; margin-top:4px'>Source: {html_text(citation.source or 'unknown')}"
            f"<br>Chunk: <code>{html_text(citation.chunk_id)}</code></p>"
            + passage_text_html(citation.text, citation.kind, citation.section))


def _evidence_table(model: RecordTableModel, stretch_column: int | None = None) -> QTableView:
    """A read-only row-selecting table whose columns are fitted to each answer (see _fit_columns) and
    stay resizable by hand; `stretch_column` (default: the last) takes the slack."""
    table = read_only_table(model)
    table.setAlternatingRowColors(True)
    style.compact_rows(table)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    if stretch_column is None:
        header.setStretchLastSection(True)
    else:
        header.setSectionResizeMode(stretch_column, QHeaderView.ResizeMode.Stretch)
    table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    return table


def _fit_columns(table: QTableView, max_width: int, wide: dict[int, int] | None = None) -> None:
    """Each column as wide as its contents, but none wider than max_width (or its own limit in `wide`):
    long titles and notes are elided and shown whole in the tooltip and the detail pane."""
    header = table.horizontalHeader()
    for column in range(table.model().columnCount()):
        if header.sectionResizeMode(column) is not QHeaderView.ResizeMode.Interactive:
            continue
        width = max(table.sizeHintForColumn(column), header.sectionSizeHint(column))
        header.resizeSection(column, min(width, (wide or {}).get(column, max_width)))


def _tab_label(text: str) -> str:
    return text.replace("&", "&&")          # a single & would make the next letter a mnemonic


def _select_row(table: QTableView, row: int) -> None:
    if 0 <= row < table.model().rowCount():
        table.setCurrentIndex(table.model().index(row, 0))
        table.scrollTo(table.model().index(row, 0))


def _first(rows, predicate) -> int:
    """Index of the first row that needs attention, or 0."""
    return next((i for i, row in enumerate(rows) if predicate(row)), 0)


class VerdictHeader(QWidget):
    """The badge, the answer in large type, why, any suspected agent, and the trace id to quote in the audit log."""

    sig_show_kept_out = Signal()        # the operator followed the suspects line's link
    sig_show_cascade = Signal()         # the operator asked for the answer's stage scores (Cascade tab)
    sig_open_trace = Signal(str)        # the operator asked for the answer's whole trace (trace view)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # Every label's text format is set, never left to Qt's AutoText guess: an answer is an agent's text, and an
        # answer that starts with a tag would otherwise be drawn as markup ("Verified by every agent." in green).
        self.badge = PlainLabel()
        self.badge.setFont(style.scaled_font(self.font(), 1.1, bold=True))
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.answer = PlainLabel("Ask the fleet a question to see its verdict here.")
        self.answer.setWordWrap(True)
        self.answer.setFont(style.scaled_font(self.font(), 1.3))
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reason = RichLabel()                               # built here, every agent's word escaped
        self.reason.setWordWrap(True)
        self.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.suspects = RichLabel()                             # suspects_html escapes ids and reasons
        self.suspects.setWordWrap(True)
        self.suspects.setStyleSheet(style.suspect_css())
        self.suspects.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                              | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.suspects.linkActivated.connect(lambda _link: self.sig_show_kept_out.emit())
        # The trajectory and the cascade monitor's outcome: plain text (stage outputs come from agents).
        self.stages = PlainLabel()
        self.stages.setWordWrap(True)
        self.stages.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stages.setStyleSheet(f"color: {style.tones().muted.name()}")
        self.cascade = PlainLabel()
        self.cascade.setWordWrap(True)
        self.cascade.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cascade_button = QToolButton()
        self.cascade_button.setText("Stage scores…")
        self.cascade_button.setAutoRaise(True)
        self.cascade_button.setToolTip("Show this answer's stage scores in the Cascade tab")
        self.cascade_button.clicked.connect(lambda: self.sig_show_cascade.emit())
        # Whether a judge read the answers' meaning: plain text (its own answer is a model's words).
        self.meaning = PlainLabel()
        self.meaning.setWordWrap(True)
        self.meaning.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.trace = PlainLabel()
        self.trace.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.trace.setFont(style.monospace_font())
        self.trace_button = QToolButton()
        self.trace_button.setText("Open trace…")
        self.trace_button.setAutoRaise(True)
        self.trace_button.setToolTip("Show this question's whole trace: every message, what the gateway did, "
                                     "the decisions and the audit events")
        self.trace_button.clicked.connect(self._on_open_trace)
        self._trace_id = ""
        self.badge.hide()
        self.meaning.hide()
        self.suspects.hide()
        self.stages.hide()
        self.cascade.hide()
        self.cascade_button.hide()
        self.trace_button.hide()

        top = QHBoxLayout()
        top.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.answer, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.addLayout(top)
        layout.addWidget(self.reason)
        layout.addWidget(self.meaning)
        layout.addWidget(self.suspects)
        stages_row = QHBoxLayout()
        stages_row.setSpacing(6)
        stages_row.addWidget(self.stages, 1)
        stages_row.addWidget(self.cascade_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(stages_row)
        layout.addWidget(self.cascade)
        trace_row = QHBoxLayout()
        trace_row.setSpacing(6)
        trace_row.addWidget(self.trace)
        trace_row.addWidget(self.trace_button)
        trace_row.addStretch(1)
        layout.addLayout(trace_row)

    def _on_open_trace(self) -> None:
        if self._trace_id:
            self.sig_open_trace.emit(self._trace_id)

    def show_answer(self, answer: Answer) -> None:
        self.badge.setText(style.VERDICT_LABELS[answer.verdict])
        self.badge.setStyleSheet(style.verdict_badge_css(answer.verdict))
        self.badge.show()
        if answer.answer:
            self.answer.setText(answer.answer)
        elif answer.verdict is Verdict.ABSTAINED:
            self.answer.setText("No answer given: the fleet did not agree. Each position is listed under Generators.")
        else:
            self.answer.setText("No answer: the fleet found no usable evidence.")
        total_ms = sum(answer.timings_ms.values())
        waits = needs_review(answer)
        review = (f" · <b style='{style.fg('warn')}'>⏳ waits for operator approval ({html_text(waits)}): "
                  f"see the Approvals tab</b>" if waits else "")
        self.reason.setText(f"<b>Why:</b> {html_text(answer.reason)}"
                            f" <span style='{style.fg('muted')}'>· {html_text(answer.tier_reason or answer.tier.value + ' risk')}"
                            f" · {total_ms:,.0f} ms</span>{participation_html(answer)}{review}")
        self.suspects.setText(suspects_html(answer))
        self.suspects.setVisible(bool(answer.suspects))
        text, tone = meaning_text(answer)
        self.meaning.setText(text)
        self.meaning.setStyleSheet(f"color: {style.tone(tone).name()};" + (" font-weight: bold;" if tone == "warn" else ""))
        self.meaning.setVisible(bool(text))
        self._show_stages(answer)
        self.trace.setText(f"trace_id {answer.trace_id}")
        self._trace_id = answer.trace_id
        self.trace_button.setVisible(bool(answer.trace_id))

    def _show_stages(self, answer: Answer) -> None:
        self.stages.setText(f"Stages: {stage_chain(answer.stages)}" if answer.stages else "")
        self.stages.setVisible(bool(answer.stages))
        self.cascade_button.setVisible(bool(answer.stages) or answer.cascade is not None)
        fired = answer.cascade is not None and answer.cascade.fired
        self.cascade.setText(f"⚠ Cascade: {outcome_text(answer.cascade)}" if fired else "")
        colour = style.tones().bad if fired and answer.cascade.halted else style.tones().warn
        self.cascade.setStyleSheet(f"color: {colour.name()}; font-weight: bold;")
        self.cascade.setVisible(fired)


def meaning_text(answer: Answer) -> tuple[str, str]:
    """(plain text, tone) of what the judges did: a warning when meaning should have been read and was not."""
    note = answer.judge
    if note.status is MeaningStatus.NOT_READ:
        return f"⚠ Meaning not read ({note.why}): {note.detail}", "warn"
    if note.status is MeaningStatus.READ:
        own = f"; their own answer from the passages: “{note.own_answer}”" if note.own_answer else ""
        return f"Meaning read by judges ({note.why}): {note.detail}{own}", "muted"
    return "", "muted"


def participation_html(answer: Answer) -> str:
    """' · 3 of 5 retrievers, 2 of 3 generators answered', marked when the quorum did not hold."""
    part = answer.participation
    if part is None:
        return ""
    if part.quorum_held:
        return f" <span style='{style.fg('muted')}'>· {html_text(participation_summary(part))}</span>"
    return f" · <b style='{style.fg('warn')}'>⚠ {html_text(participation_summary(part))}: no quorum</b>"


def suspects_html(answer: Answer) -> str:
    """'⚠ Suspected: ret-x — 3 of its 8 passages kept out (…)', one line per agent, and a link to them."""
    reasons: dict[str, list[str]] = defaultdict(list)
    for agent_id, reason in ((s.agent_id, s.reason) for s in answer.suspects):
        reasons[agent_id].append(reason)
    lines = [f"⚠ Suspected: <b>{html_text(agent_id)}</b> — {html_text('; '.join(r for r in why if r))}"
             for agent_id, why in reasons.items()]
    if lines and answer.excluded:
        lines[-1] += " · <a href='#kept-out'>show the kept-out passages</a>"
    return "<br>".join(lines)


TAB_CITATIONS, TAB_PASSAGES, TAB_GENERATORS, TAB_AGENTS = range(4)
TAB_NAMES = ("Citations", "Context & kept out", "Generators", "Agents")
# Widest a fitted column may start (pixels): titles and notes are elided beyond that (whole in the
# tooltip and the detail pane); ids and agent lists are short enough to show whole.
MAX_COLUMN_WIDTH = 300
MAX_TITLE_WIDTH = 200
MAX_NOTE_WIDTH = 520
MAX_REASON_WIDTH = 260


class AnswerView(QWidget):
    """Verdict header above; the evidence tabs beside one detail pane that shows whatever is selected."""

    sig_show_cascade = Signal(object)   # Answer: the operator asked for its stage scores
    sig_open_trace = Signal(str)        # trace id: the operator asked for the answer's whole trace

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._answer: Answer | None = None
        self._passages: dict[str, PassageRow] = {}
        self._claim_selected = False          # Generators tab: detail shows the claim (else the candidate)
        self.header = VerdictHeader()

        self.citations_list = QListWidget()
        self.citations_list.setWordWrap(True)

        self.passages_model: RecordTableModel[PassageRow] = RecordTableModel(
            PASSAGE_COLUMNS, self, row_background=kept_out_background)
        self.passages_table = _evidence_table(self.passages_model)
        self.passages_table.setItemDelegateForColumn(PASSAGE_FLAGS_COLUMN, FlagChipsDelegate(self.passages_table))

        self.candidates_model: RecordTableModel[Candidate] = RecordTableModel(
            CANDIDATE_COLUMNS, self, row_background=lambda c: style.tones().bad_tint if failing(c) else None)
        self.candidates_table = _evidence_table(self.candidates_model)
        self.checks_model = RecordTableModel(CHECK_COLUMNS, self)
        self.checks_table = _evidence_table(self.checks_model, stretch_column=CHECK_CLAIM_COLUMN)
        self.checks_table.setWordWrap(True)        # claims are sentences: read them whole
        self.checks_table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.checks_box = _boxed("Claim checks", self.checks_table)
        generators_page = QWidget()
        generators_layout = QVBoxLayout(generators_page)
        generators_layout.setContentsMargins(0, 0, 0, 0)
        generators_layout.addWidget(self.candidates_table, 0)
        generators_layout.addWidget(self.checks_box, 1)
        # In a short window the page scrolls instead of raising the window's minimum height.
        generators = QScrollArea()
        generators.setWidget(generators_page)
        generators.setWidgetResizable(True)
        generators.setFrameShape(QFrame.Shape.NoFrame)

        self.outcomes_model: RecordTableModel[AgentOutcome] = RecordTableModel(OUTCOME_COLUMNS, self)
        self.outcomes_table = _evidence_table(self.outcomes_model)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        for name, widget in zip(TAB_NAMES, (self.citations_list, self.passages_table, generators, self.outcomes_table)):
            self.tabs.addTab(widget, _tab_label(name))

        self.detail = SafeBrowser()
        self.detail_box = _boxed("Cited passage", self.detail)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.tabs)
        body.addWidget(self.detail_box)
        body.setStretchFactor(0, 2)
        body.setStretchFactor(1, 1)
        body.setSizes([880, 380])
        body.setChildrenCollapsible(False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(body, 1)

        self.citations_list.currentItemChanged.connect(self._refresh_detail)
        self.passages_table.selectionModel().currentRowChanged.connect(self._refresh_detail)
        self.candidates_table.selectionModel().currentRowChanged.connect(self._on_candidate_changed)
        self.checks_table.selectionModel().currentRowChanged.connect(self._on_claim_changed)
        self.outcomes_table.selectionModel().currentRowChanged.connect(self._refresh_detail)
        self.tabs.currentChanged.connect(self._refresh_detail)
        self.header.sig_show_kept_out.connect(lambda: self.show_tab(TAB_PASSAGES))
        self.header.sig_show_cascade.connect(self._on_show_cascade)
        self.header.sig_open_trace.connect(self.sig_open_trace)
        self._refresh_detail()

    # --- showing an answer -----------------------------------------------------------------
    def show_answer(self, answer: Answer) -> None:
        self._answer = answer
        self.header.show_answer(answer)
        self._show_citations(answer.citations)

        rows = passage_rows(answer.context, answer.excluded)
        self._passages = passages_by_id(rows)
        self.passages_model.set_records(rows)
        _fit_columns(self.passages_table, MAX_COLUMN_WIDTH, {PASSAGE_TITLE_COLUMN: MAX_TITLE_WIDTH,
                                                             PASSAGE_NOTE_COLUMN: MAX_NOTE_WIDTH})
        _select_row(self.passages_table, _first(rows, lambda r: r.kept_out and r.flags))

        self.candidates_model.set_records(answer.candidates)
        _fit_columns(self.candidates_table, MAX_COLUMN_WIDTH)
        self._fit_candidates_height()
        self.checks_model.set_records(())
        _select_row(self.candidates_table, _first(answer.candidates, failing))

        self.outcomes_model.set_records(answer.agents)
        _fit_columns(self.outcomes_table, MAX_COLUMN_WIDTH)

        self._update_tab_titles(answer)
        if answer.verdict is Verdict.ABSTAINED and answer.candidates:
            self.show_tab(TAB_GENERATORS)      # the positions are the answer now
        self._refresh_detail()

    def _on_show_cascade(self) -> None:
        if self._answer is not None:
            self.sig_show_cascade.emit(self._answer)

    def _fit_candidates_height(self) -> None:
        """Candidates get the height their rows need (up to six, then they scroll), the claim checks the rest;
        in a short window the candidates give way down to two rows, so the window's minimum never grows."""
        table = self.candidates_table
        rows = min(max(self.candidates_model.rowCount(), 1), 6)

        def height(n: int) -> int:
            return (table.horizontalHeader().sizeHint().height() + n * table.verticalHeader().defaultSectionSize()
                    + 2 * table.frameWidth() + 4)
        table.setMinimumHeight(height(min(rows, 2)))
        table.setMaximumHeight(height(rows))

    def show_tab(self, tab: int) -> None:
        self.tabs.setCurrentIndex(tab)

    def _show_citations(self, citations: tuple[Citation, ...]) -> None:
        self.citations_list.clear()
        for citation in citations:
            item = QListWidgetItem(cell(citation_label(citation)))
            item.setData(Qt.ItemDataRole.UserRole, citation)
            item.setToolTip(tooltip(citation.text[:400]))
            self.citations_list.addItem(item)
        if citations:
            self.citations_list.setCurrentRow(0)    # the evidence is the point: show it without a click

    def _update_tab_titles(self, answer: Answer) -> None:
        flagged = sum(bool(c.explanation and c.explanation.flags) for c in answer.excluded)
        failing_count = sum(failing(c) for c in answer.candidates)
        failed_calls = sum(o.status is not CallStatus.OK for o in answer.agents)
        titles = (f"Citations ({len(answer.citations)})",
                  f"Context & kept out ({len(answer.context)} in, {len(answer.excluded)} out)",
                  f"Generators ({len(answer.candidates)}" + (f", {failing_count} unsupported)" if failing_count else ")"),
                  f"Agents ({len(answer.agents)}" + (f", {failed_calls} failed)" if failed_calls else ")"))
        alarms = (False, bool(flagged), bool(failing_count), bool(failed_calls))
        bar = self.tabs.tabBar()
        for tab, (title, alarm) in enumerate(zip(titles, alarms)):
            self.tabs.setTabText(tab, _tab_label(title))
            bar.setTabTextColor(tab, style.tones().bad if alarm else bar.palette().windowText().color())

    # --- selection -> detail pane ----------------------------------------------------------
    def _on_candidate_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        candidate = self.candidates_model.record(current.row()) if current.isValid() else None
        self._claim_selected = False
        self.checks_model.set_records(candidate.checks if candidate else ())
        _fit_columns(self.checks_table, MAX_COLUMN_WIDTH, {CHECK_REASON_COLUMN: MAX_REASON_WIDTH})
        self.checks_box.setTitle(f"Claim checks of {candidate.agent_id}" if candidate else "Claim checks")
        self._refresh_detail()

    def _on_claim_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self._claim_selected = current.isValid()
        self._refresh_detail()

    def _refresh_detail(self, *_args) -> None:
        title, text, placeholder = self._detail_for(self.tabs.currentIndex())
        self.detail_box.setTitle(title)
        self.detail.setPlaceholderText(placeholder)
        if text:
            self.detail.setHtml(text)
        else:
            self.detail.clear()

    def _detail_for(self, tab: int) -> tuple[str, str, str]:
        """(pane title, HTML or "", placeholder) for the current selection of `tab`."""
        answered = self._answer is not None
        if tab == TAB_PASSAGES:
            row = self._current(self.passages_table, self.passages_model)
            if row is None:
                return "Passage", "", ("Select a passage to read it and why it is in or out of the context."
                                       if self.passages_model.rowCount() else "No passage was retrieved.")
            return "Passage", passage_html(row, reference_passage(row, self._answer.context)), ""
        if tab == TAB_GENERATORS:
            claim = self._current(self.checks_table, self.checks_model) if self._claim_selected else None
            if claim is not None:
                return "Claim check", claim_check_html(claim, self._passages), ""
            candidate = self._current(self.candidates_table, self.candidates_model)
            if candidate is None:
                return "Generator", "", ("Select a generator to see its answer and claim checks."
                                         if self.candidates_model.rowCount() else "No generator answered.")
            return "Generator", candidate_html(candidate), ""
        if tab == TAB_AGENTS:
            outcome = self._current(self.outcomes_table, self.outcomes_model)
            if outcome is None:
                return "Agent call", "", "Select an agent to see what its call returned."
            return "Agent call", outcome_html(outcome), ""
        item = self.citations_list.currentItem()
        citation = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if citation is None:
            return "Cited passage", "", ("This answer cites no passage." if answered
                                         else "Select a citation to read the passage it points to.")
        return "Cited passage", self._citation_detail(citation), ""

    def _citation_detail(self, citation: Citation) -> str:
        """The chunk, its source and its votes (which retrievers returned it, its share of the vote, its
        flags), then the claims that cite it: the passage row secure retrieval kept, when there is one."""
        row = self._passages.get(citation.chunk_id)
        body = passage_html(row) if row is not None and not row.kept_out else citation_html(citation)
        claims = [(c.agent_id, check) for c in (self._answer.candidates if self._answer else ())
                  for check in c.checks if citation.chunk_id in check.claim.citations]
        if not claims:
            return body
        rows = "".join(f"<li><b>{html_text(agent)}</b>: {html_text(check.claim.text)} "
                       f"<span style='{style.fg('good' if check.supported else 'bad')}'>"
                       f"({html_text(check.label.value.replace('_', ' '))})</span></li>" for agent, check in claims)
        return f"{body}<p><b>Claims citing it</b></p><ul>{rows}</ul>"

    @staticmethod
    def _current(table: QTableView, model: RecordTableModel):
        index = table.currentIndex()
        return model.record(index.row()) if index.isValid() and index.row() < model.rowCount() else None
