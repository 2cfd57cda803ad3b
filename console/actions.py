"""Every action of the console and its shortcut, declared once.

The menus, the panels' keyboard handling and the cheat sheet (the `?` key) all read ACTIONS, so a
shortcut is never defined twice nor listed wrong. An action either works anywhere in the window
(panel=None) or only while the focus is inside one panel (its dock's id): single letters such as A
(approve) and R (reject) mean something only where the operator is looking, and a text field that
has the focus keeps its letters (Qt gives printable keys to an editor before any shortcut).

ActionBook makes one QAction per spec; MainWindow binds each to the panel method that does it
(`book.bind("approvals.approve", panel.approve_selected)`) and attaches panel-scoped ones to their
dock, so panels hold no shortcut of their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from .docks import PANELS


@dataclass(frozen=True)
class ActionSpec:
    id: str                 # "<group>.<verb>": the key MainWindow binds and tests trigger
    text: str               # as in a menu ("&" marks the mnemonic)
    shortcut: str = ""      # QKeySequence text; "" for menu-only actions
    tip: str = ""           # one line: what it does
    panel: str | None = None   # the dock whose focus scopes the shortcut; None: anywhere in the window
    checkable: bool = False
    group: str = "General"  # the cheat sheet's section and the menu it goes in
    also: tuple[str, ...] = ()   # other keys for the same action (Shift+? where a layout reports the shift)


def _view_actions() -> tuple[ActionSpec, ...]:
    keys = [f"Alt+{n}" for n in (*range(1, 10), 0)]
    return tuple(ActionSpec(f"view.{panel.id}", panel.title, keys[i] if i < len(keys) else "",
                            f"Show the {panel.title} panel and put the focus in it", group="View")
                 for i, panel in enumerate(PANELS))


ACTIONS: tuple[ActionSpec, ...] = (
    # General
    ActionSpec("help.shortcuts", "&Keyboard shortcuts", "?", "List every shortcut (this sheet)", group="Help",
               also=("Shift+?", "F1")),
    ActionSpec("question.focus", "Ask a &question", "Ctrl+L", "Put the cursor in the question box"),
    ActionSpec("trace.open", "Open &trace…", "Ctrl+T", "Open a question's whole trace by its trace id"),
    ActionSpec("app.quit", "&Quit", "Ctrl+Q", "Stop the fleet, flush the store and close"),
    # View
    *_view_actions(),
    ActionSpec("view.reset_layout", "&Reset layout", "", "Put every panel back where it was at first start",
               group="View"),
    # Fleet
    ActionSpec("demo.toggle", "&Demo traffic", "Ctrl+D",
               "Feed demo questions to the fleet at the chosen rate", checkable=True, group="Fleet"),
    ActionSpec("fleet.start", "&Start the built-in fleet", "", "Start the agent processes again", group="Fleet"),
    ActionSpec("corpus.reindex", "Re-&index the corpus", "",
               "Read the corpus folder again and embed what changed, in the background", group="Fleet"),
    ActionSpec("fleet.stop", "S&top the built-in fleet", "", "Stop every built-in agent process (questions get no answer until it is started again)",
               group="Fleet"),
    ActionSpec("fleet.quarantine", "&Quarantine agent…", "Q", "Take the selected agent off all work, with a reason",
               panel="fleet", group="Fleet"),
    ActionSpec("fleet.release", "&Release agent…", "R", "Let the selected quarantined agent back on probation",
               panel="fleet", group="Fleet"),
    # Approval queue
    ActionSpec("approvals.next", "&Next item", "J", "Select the next item in the queue", panel="approvals",
               group="Approval queue"),
    ActionSpec("approvals.previous", "&Previous item", "K", "Select the previous item", panel="approvals",
               group="Approval queue"),
    ActionSpec("approvals.next_pending", "Next &pending item", "N", "Jump to the next item that waits",
               panel="approvals", group="Approval queue"),
    ActionSpec("approvals.approve", "&Approve…", "A", "Approve the selected item(s): pick a reason, then Enter",
               panel="approvals", group="Approval queue"),
    ActionSpec("approvals.reject", "Re&ject…", "R", "Reject the selected item(s): pick a reason, then Enter",
               panel="approvals", group="Approval queue"),
    ActionSpec("approvals.extend_next", "E&xtend selection down", "Shift+J", "Add the next item to the selection",
               panel="approvals", group="Approval queue"),
    ActionSpec("approvals.extend_previous", "Extend selection &up", "Shift+K", "Add the previous item to the selection",
               panel="approvals", group="Approval queue"),
    ActionSpec("approvals.filter", "&Filter…", "/", "Put the cursor in the queue's filter", panel="approvals",
               group="Approval queue"),
    # Alerts
    ActionSpec("alerts.next", "&Next alert", "J", "Select the next alert", panel="alerts", group="Alerts"),
    ActionSpec("alerts.previous", "&Previous alert", "K", "Select the previous alert", panel="alerts",
               group="Alerts"),
    ActionSpec("alerts.acknowledge", "&Acknowledge…", "A", "Acknowledge the selected alert(s), with a comment",
               panel="alerts", group="Alerts"),
    ActionSpec("alerts.silence", "&Silence…", "S", "Mute notification of this kind or agent for a while",
               panel="alerts", group="Alerts"),
    ActionSpec("alerts.trace", "Open &trace", "T", "Open the trace of the selected alert", panel="alerts",
               group="Alerts"),
    # Audit
    ActionSpec("audit.verify", "&Verify the chain", "", "Check every audit event against its hash", group="Audit"),
    ActionSpec("audit.export", "&Export the audit trail…", "Ctrl+E",
               "Write the filtered events to CSV or JSON Lines (the export is audited)", group="Audit"),
)

GROUPS: tuple[str, ...] = tuple(dict.fromkeys(spec.group for spec in ACTIONS))
_BY_ID = {spec.id: spec for spec in ACTIONS}
assert len(_BY_ID) == len(ACTIONS), "two actions share an id"


def spec(action_id: str) -> ActionSpec:
    return _BY_ID[action_id]


def scope_text(spec: ActionSpec) -> str:
    """Where the shortcut works, for the cheat sheet."""
    if spec.panel is None:
        return "anywhere"
    title = next((p.title for p in PANELS if p.id == spec.panel), spec.panel)
    return f"in {title}"


class ActionBook(QObject):
    """One QAction per ActionSpec, owned by the window. Window-wide ones are added to the window at
    once; panel-scoped ones go on their dock when MainWindow calls attach()."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._actions: dict[str, QAction] = {}
        for s in ACTIONS:
            action = QAction(s.text, window)
            action.setObjectName(s.id)
            action.setCheckable(s.checkable)
            if s.shortcut:
                action.setShortcuts([QKeySequence(k) for k in (s.shortcut, *s.also)])
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut if s.panel is None
                                      else Qt.ShortcutContext.WidgetWithChildrenShortcut)
            tip = f"{s.tip} ({QKeySequence(s.shortcut).toString(QKeySequence.SequenceFormat.NativeText)})" \
                if s.shortcut else s.tip
            action.setToolTip(tip)
            action.setStatusTip(s.tip)
            self._actions[s.id] = action
            if s.panel is None:
                window.addAction(action)

    def __getitem__(self, action_id: str) -> QAction:
        return self._actions[action_id]

    def __iter__(self):
        return iter(self._actions.values())

    def bind(self, action_id: str, slot: Callable[..., object]) -> QAction:
        """Runs slot when the action fires (with the checked state, for a checkable action)."""
        action = self._actions[action_id]
        if action.isCheckable():
            action.toggled.connect(slot)
        else:
            action.triggered.connect(lambda _checked=False: slot())
        return action

    def attach(self, panel_id: str, widget: QWidget) -> list[QAction]:
        """Puts the panel's scoped actions on `widget` (its dock), so they fire only with the focus inside it."""
        attached = [self._actions[s.id] for s in ACTIONS if s.panel == panel_id]
        widget.addActions(attached)
        return attached

    def unbound(self) -> list[str]:
        """Ids of actions nothing was bound to: a declared shortcut that does nothing is a bug."""
        return [action_id for action_id, action in self._actions.items()
                if action.receivers("2triggered(bool)") == 0 and action.receivers("2toggled(bool)") == 0]
