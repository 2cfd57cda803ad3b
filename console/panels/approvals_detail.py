"""The selected review item as one page of escaped HTML: everything an operator needs to decide.

In reading order: the question; the answer with its verdict and reason; why it waits; the decision (once
made); the competing positions (when the engine abstained); every candidate answer with its claims, each
labelled (✓ supported, ✗ refuted, ? not enough evidence) with the chunks it cites and the evidence
sentence or the reason; the cascade monitor's scores per stage; the agents involved with their role and
outcome, and whom a decision counts for; the citations. All of it comes from the item's payload (the
whole Answer, as the engine stored it); agents' and operators' text is data, so every string is escaped.
Colours are the style's tones, read when the page is built (the panel rebuilds it on a theme change).
"""
from __future__ import annotations

from engine import (AgentSummary, CascadeSummary, ClaimSummary, ReviewItem, RiskTier, StageKind, StageScoreSummary,
                    Verdict)

from .. import style
from ..stage_text import stage_label
from ..untrusted import html_text
from .approvals_model import (STATUS_TONES, age_text, answer_cell, asked_again_text, claim_text, decision_text,
                              progress_text, when_text)

EXCERPT = 600          # characters of a cited passage shown
MUTED_P = "margin-top:0; margin-bottom:4px"


def muted(text: str) -> str:
    """Already escaped text, in the muted tone."""
    return f"<span style='{style.fg('muted')}'>{text}</span>"


def toned(tone: str, text: str, bold: bool = False) -> str:
    """Already escaped text in a tone ("good", "bad", ...)."""
    weight = "; font-weight:bold" if bold else ""
    return f"<span style='{style.fg(tone)}{weight}'>{text}</span>"


# --- claims ----------------------------------------------------------------------------------------
def claim_mark(claim: ClaimSummary) -> tuple[str, str]:
    """✓ supported, ✗ refuted by its evidence, ? not backed by it (or unsupported, for answers without a label)."""
    if claim.supported:
        return "✓", style.tones().good.name()
    if claim.label in ("", "refuted"):
        return "✗", style.tones().bad.name()
    return "?", style.tones().warn.name()


def claim_label_text(claim: ClaimSummary) -> str:
    if claim.supported:
        return "supported"
    if claim.label in ("", "refuted"):
        return "refuted" if claim.label else "not supported"
    return claim.label.replace("_", " ")


def claim_html(claim: ClaimSummary) -> str:
    mark, colour = claim_mark(claim)
    cites = f" <code>[{html_text(', '.join(claim.citations))}]</code>" if claim.citations else f" {muted('(cites nothing)')}"
    head = (f"<span style='color:{colour}'><b>{mark} {html_text(claim_label_text(claim))}</b></span> "
            f"{html_text(claim.text)}{cites}")
    lines = []
    if claim.evidence:
        lines.append(f"{muted('evidence:')} “{html_text(claim.evidence[:EXCERPT])}”")
    if claim.entailment is not None:
        tone = "good" if claim.supported else "bad"     # the verdict's reading, not a threshold of the console's
        lines.append(f"{muted('meaning:')} {toned(tone, f'entailed P = {claim.entailment:.2f}')}"
                     + (f" {muted('read against')} “{html_text(claim.premise[:EXCERPT])}”" if claim.premise else ""))
    if claim.reason and claim.reason != claim_label_text(claim):
        lines.append(muted(html_text(claim.reason)))
    return f"<li>{head}" + "".join(f"<br>{line}" for line in lines) + "</li>"


def candidates_html(item: ReviewItem) -> list[str]:
    candidates = item.candidates_summary
    parts = [f"<h4 style='margin-bottom:2px'>Candidate answers ({len(candidates)})</h4>"]
    if not candidates:
        parts.append(f"<p style='{style.fg('muted')}'>No generator answered.</p>")
    given = item.answer_text
    for cand in candidates:
        agree = f" · agrees with {html_text(', '.join(cand.agreeing))}" if cand.agreeing else ""
        chosen = f" {toned('good', '· the answer given', bold=True)}" if given and cand.answer == given else ""
        challenge = f"<br>{muted('challenge: ' + html_text(cand.challenge))}" if cand.challenge else ""
        if cand.relevance is not None:
            by = f", {html_text(cand.relevance_by)}" if cand.relevance_by else ""
            relevance = (toned("bad", f"does not answer the question (P = {cand.relevance:.2f}{by})", bold=True)
                         if cand.off_topic else muted(f"answers the question (P = {cand.relevance:.2f}{by})"))
            challenge = f"<br>{relevance}{challenge}"
        parts.append(f"<p style='margin-bottom:0'><b>{html_text(cand.agent_id)}</b>{chosen} "
                     f"{muted(f'support {cand.support_rate:.0%} · credibility {cand.credibility:.2f}{agree}')}<br>"
                     f"{html_text(cand.answer or '(empty answer)')}{challenge}</p>")
        if cand.claims:
            parts.append(f"<ul style='margin-top:0'>{''.join(claim_html(c) for c in cand.claims)}</ul>")
    return parts


def positions_html(item: ReviewItem) -> list[str]:
    """The positions the engine could not choose between (shown when it abstained)."""
    positions = item.positions
    if len(positions) < 2:
        return []
    parts = [f"<h4 style='margin-bottom:2px'>Competing positions ({len(positions)})</h4><ol style='margin-top:0'>"]
    for position in positions:
        facts = f"support {position.support_rate:.0%} · credibility {position.credibility:.2f}"
        parts.append(f"<li><b>{html_text(', '.join(position.agents))}</b> {muted(facts)}<br>"
                     f"{html_text(position.answer or '(empty answer)')}</li>")
    parts.append("</ol>")
    return parts


# --- cascade ---------------------------------------------------------------------------------------
def score_stage_label(score: StageScoreSummary) -> str:
    try:
        return stage_label(score.index, StageKind(score.stage), score.hop, score.attempt)
    except ValueError:          # a stage kind this console does not know: its raw name
        return f"{score.index + 1} {score.stage}"


def cascade_text(cascade: CascadeSummary) -> str:
    """'context poisoning at stage 2 (retrieve) · M4 rollback · resolved', or the clean outcome."""
    if not cascade.fired:
        return "no cascade: every stage stayed below the threshold"
    kind = cascade.cascade_type.replace("_", " ") or "cascade"
    stage = ""
    if cascade.stage is not None:
        name = next((s.stage for s in cascade.scores if s.index == cascade.stage), "")
        stage = f" at stage {cascade.stage + 1}" + (f" ({name})" if name else "")
    outcome = "halted for review" if cascade.halted else "resolved"
    return f"{kind}{stage} · {cascade.mitigation} · {outcome}"


def cascade_html(cascade: CascadeSummary | None) -> list[str]:
    if cascade is None:
        return ["<h4 style='margin-bottom:2px'>Cascade monitor</h4>",
                f"<p style='{MUTED_P}; {style.fg('muted')}'>Not watched by the cascade monitor.</p>"]
    tone = "bad" if cascade.halted else "warn" if cascade.fired else "good"
    parts = ["<h4 style='margin-bottom:2px'>Cascade monitor</h4>",
             f"<p style='{MUTED_P}'>{toned(tone, html_text(cascade_text(cascade)), bold=cascade.fired)}"
             + (f"<br>{muted(html_text(cascade.reason))}" if cascade.reason else "") + "</p>"]
    if not cascade.scores:
        return parts
    cell = "nowrap style='padding:1px 6px'"
    header = "".join(f"<th align='{align}' {cell}>{title}</th>" for title, align in
                     (("Stage", "left"), ("SFV", "right"), ("CSCT", "right"), ("CPM", "right"), ("p", "right"),
                      ("", "left")))
    rows = [f"<tr style='{style.bg('neutral_tint')}'>{header}</tr>"]
    reasons = []
    for score in cascade.scores:
        background = f" style='{style.bg('bad_tint')}'" if score.fired else ""
        fired = toned("bad", "fired" + (f": {html_text(score.cascade_type.replace('_', ' '))}" if score.cascade_type
                                         else ""), bold=True) if score.fired else ""
        numbers = "".join(f"<td align='right' {cell}>{value:.2f}</td>" for value in (score.sfv, score.csct, score.cpm))
        p = f"<b>{score.p:.2f}</b>" if score.fired else f"{score.p:.2f}"
        rows.append(f"<tr{background}><td {cell}>{html_text(score_stage_label(score))}</td>{numbers}"
                    f"<td align='right' {cell}>{p}</td><td {cell}>{fired}</td></tr>")
        if score.fired:     # outside the table: a long reason would stretch its columns
            reasons += [f"{html_text(score_stage_label(score))}: {html_text(reason)}" for reason in score.reasons]
    parts.append(f"<table cellspacing='0' cellpadding='0'>{''.join(rows)}</table>")
    if reasons:
        parts.append(f"<p style='{MUTED_P}; {style.fg('muted')}'>" + "<br>".join(f"↳ {r}" for r in reasons) + "</p>")
    return parts


# --- agents ----------------------------------------------------------------------------------------
def agent_outcome(agent: AgentSummary) -> tuple[str, str]:
    """(what came of the agent's work, its tone) for the agents table."""
    if agent.status and agent.status != "ok":
        return f"{agent.status}" + (f": {agent.error}" if agent.error else ""), "bad"
    if agent.role == "retriever":
        if agent.suspect:
            return f"reported: {agent.suspect}", "bad"
        if agent.passages_kept:
            return f"{agent.passages_kept} passage(s) in the safe context", "good"
        return "nothing in the safe context", "muted"
    if agent.role == "generator":
        if agent.support_rate is None:
            return "no answer", "muted"
        text = f"{'gave the answer' if agent.gave_answer else 'answered'} · support {agent.support_rate:.0%}"
        if agent.challenge:
            text += f" · challenge {agent.challenge}"
        failed = agent.support_rate < 0.8 or bool(agent.challenge_outcome and agent.challenge_outcome.failed)
        return text, "good" if agent.gave_answer else "bad" if failed else "text"
    if agent.role == "verifier":
        return f"labelled {agent.votes} claim(s)", "text"
    return "", "text"


def agents_html(item: ReviewItem) -> list[str]:
    agents = item.agents_summary
    parts = [f"<h4 style='margin-bottom:2px'>Agents involved ({len(agents)})</h4>"]
    counted = item.decision_counts_for
    if counted:
        parts.append(f"<p style='{MUTED_P}'>A decision counts for {html_text(', '.join(counted))}: "
                     f"{toned('good', 'approve')} credits them, {toned('bad', 'reject')} debits them.</p>")
    else:
        parts.append(f"<p style='{MUTED_P}; {style.fg('muted')}'>No agent gave this answer: a decision moves no "
                     f"agent's reputation.</p>")
    if not agents:
        return parts
    cell = "style='padding:1px 6px'"
    rows = [f"<tr style='{style.bg('neutral_tint')}'>" + "".join(
        f"<th align='{align}' {cell}>{title}</th>" for title, align in
        (("Agent", "left"), ("Role", "left"), ("Call", "left"), ("ms", "right"), ("Outcome", "left"))) + "</tr>"]
    for agent in agents:
        outcome, tone = agent_outcome(agent)
        call = toned("good" if agent.status == "ok" else "bad", html_text(agent.status)) if agent.status else muted("—")
        name = f"<b>{html_text(agent.agent_id)}</b>" if agent.decision_counts else html_text(agent.agent_id)
        latency = f"{agent.latency_ms:,.0f}" if agent.status else ""
        rows.append(f"<tr><td {cell}>{name}</td><td {cell}>{html_text(agent.role)}</td><td {cell}>{call}</td>"
                    f"<td align='right' {cell}>{latency}</td><td {cell}>{toned(tone, html_text(outcome))}</td></tr>")
    parts.append(f"<table cellspacing='0' cellpadding='0'>{''.join(rows)}</table>")
    return parts


# --- the page --------------------------------------------------------------------------------------
def citations_html(item: ReviewItem) -> list[str]:
    citations = item.citations
    if not citations:
        return []
    parts = [f"<h4 style='margin-bottom:2px'>Citations ({len(citations)})</h4>"]
    for citation in citations:
        title = citation.get("title") or citation.get("chunk_id", "")
        parts.append(f"<p style='margin-bottom:0'><b>{html_text(str(title))}</b> "
                     f"{muted(html_text(str(citation.get('source', ''))) + ' · <code>' + html_text(str(citation.get('chunk_id', ''))) + '</code>')}"
                     f"<br>{html_text(str(citation.get('text', ''))[:EXCERPT])}</p>")
    return parts


def item_html(item: ReviewItem, now: float | None = None) -> str:
    """Everything an operator needs to decide, escaped: the agents' text is data, never markup."""
    tone = STATUS_TONES[item.status]
    waited = f" · waiting {age_text(now - item.created_at)}" if now is not None and item.pending else ""
    verdict = style.VERDICT_LABELS[item.verdict]
    parts = [f"<h3 style='margin:0'>#{item.id} · {toned(tone, html_text(item.status.value))} · "
             f"{toned('bad', 'high risk') if item.tier is RiskTier.HIGH else html_text(item.tier.value) + ' risk'}</h3>",
             f"<p style='margin-top:4px'><b>Question:</b> {html_text(item.question)}"
             + (f" {muted(html_text('(' + asked_again_text(item) + ')'))}" if item.asked_times > 1 else "") + "</p>",
             f"<p><b>Answer:</b> {html_text(answer_cell(item))}<br>"
             f"{muted(html_text(verdict) + ': ' + html_text(item.answer_reason or '—'))}</p>",
             f"<p><b>Waits because:</b> {html_text(item.why)}<br>"
             f"{muted('queued ' + html_text(when_text(item.created_at)) + html_text(waited) + ' · trace_id <code>' + html_text(item.trace_id) + '</code>')}</p>"]
    progress = progress_text(item)
    if progress:
        parts.append(f"<p>{toned('warn', html_text(progress[0].upper() + progress[1:]), bold=True)} "
                     f"{muted('(different operators; nobody approves a question they asked)')}</p>")
    claim = claim_text(item, now) if now is not None else ""
    if claim:
        parts.append(f"<p>{toned('warn', html_text(claim[0].upper() + claim[1:]), bold=True)}</p>")
    if not item.pending:
        parts.append(f"<p>{toned(tone, '<b>Decision:</b> ' + html_text(decision_text(item)))} "
                     f"{muted('(' + html_text(when_text(item.decided_at)) + ')')}</p>")
    parts += positions_html(item) if item.verdict is Verdict.ABSTAINED else []
    parts += candidates_html(item)
    parts += cascade_html(item.cascade_summary)
    parts += agents_html(item)
    parts += citations_html(item)
    return "".join(parts)
