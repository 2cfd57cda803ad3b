"""The console's panels as docks: which exist, in which order, and where they start.

Each panel is a QDockWidget whose objectName is its id, so QSettings can save and restore where the
operator put it. The first start (and View → Reset layout) puts the fleet's health at the top
(Fleet, Trust, Cascade, Corpus as tabs) and the work below (Questions, Approvals, Alerts, Gateway, Memory,
Tools, Audit as tabs), the first of each group in front. A new panel is one line here, its widget in
MainWindow._make_panels and its actions in console/actions.py.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Area(enum.Enum):
    TOP = "top"
    BOTTOM = "bottom"


@dataclass(frozen=True)
class PanelSpec:
    id: str        # the dock's objectName (saved layouts refer to it) and its action "view.<id>"
    title: str
    area: Area
    tip: str       # what the panel is for, on its tab


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("fleet", "Fleet", Area.TOP, "Every agent: state, score, latency, errors; quarantine and release"),
    PanelSpec("questions", "Questions", Area.BOTTOM, "Ask the fleet; the answer, its citations and its stages"),
    PanelSpec("approvals", "Approvals", Area.BOTTOM, "High-risk answers waiting for an operator's decision"),
    PanelSpec("alerts", "Alerts", Area.BOTTOM, "Quarantines, blocked injections, cascades, agents down; silences"),
    PanelSpec("trust", "Trust", Area.TOP, "Every agent's trust score over time, and the quarantine floor"),
    PanelSpec("cascade", "Cascade", Area.TOP, "Each question's stages as the cascade monitor scored them"),
    PanelSpec("gateway", "Gateway", Area.BOTTOM, "Messages the gateway blocked, sanitised or escalated"),
    PanelSpec("memory", "Memory", Area.BOTTOM, "Every agent's own memory: versions, snapshots, rollback, quarantine"),
    PanelSpec("tools", "Tools", Area.BOTTOM, "Agents' tool calls, the ones waiting for an operator first"),
    PanelSpec("audit", "Audit", Area.BOTTOM, "The hash-chained audit trail: filter, verify, export"),
    # Last, so the panels above keep their Alt+number; its tab sits with Fleet, Trust and Cascade.
    PanelSpec("corpus", "Corpus", Area.TOP, "The documents the built-in agents answer from: index progress, "
                                            "skipped files, when it was indexed; re-index"),
)
PANEL_IDS: tuple[str, ...] = tuple(p.id for p in PANELS)
_BY_ID = {p.id: p for p in PANELS}


def panel(panel_id: str) -> PanelSpec:
    return _BY_ID[panel_id]
