"""Operator alerts: what the engine raises, how severe it is, and how operators acknowledge and silence it.

    kinds       AlertKind, Severity, KINDS (kind -> label, severity, meaning), severity_of, parse_kind
    row         AlertRow (as stored, marked muted or not when read), NewAlert
    rules       alerts_for(answer, at): injection_blocked, cascade_triggered, consensus_failed, quorum_lost
    silences    Silence, matches, muting: a silence mutes notification, never detection (as Alertmanager)
    book        AlertBook(store, clock): record, alerts, acknowledge, silence, end_silence, silences,
                is_muted, unacknowledged_counts
    table       the SQL of the alerts and silences tables
    migrations  their schema steps (versions 3 and 8 of the one SQLite file)
    (the command line: engine.cli.alerts, `main.py alerts list | ack | silence | silences | unsilence`)

The reputation book raises auto_quarantine, score_drop, agent_down and behaviour_shift (engine.reputation.keeper
saves them); the rules raise the rest. This package imports only the light modules here: the book
(which imports the store) is imported as engine.alerts.book.
"""
from .kinds import KINDS, KindInfo, Severity, label_of, parse_kind, severity_of
from .row import AlertRow, NewAlert
from .silences import MAX_SILENCE_S, Silence, format_duration, matches, muting, parse_duration

__all__ = ["KINDS", "KindInfo", "Severity", "label_of", "parse_kind", "severity_of", "AlertRow", "NewAlert",
           "MAX_SILENCE_S", "Silence", "format_duration", "matches", "muting", "parse_duration"]
