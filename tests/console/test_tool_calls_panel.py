"""The Tools panel on a real engine's tool broker: agents' calls as recorded (pending first, coloured by
status), the operator's approval (which writes the outbox; nothing is ever sent) and rejection, each with a
required reason, the pending count in the tab title, and the permission matrix, read-only.

Calls are made the way an agent's reply makes them, through engine.tools.handle; the engine is the small
test fleet with a permission matrix, not launched (see test_memory_panel)."""
from __future__ import annotations

import html
import json

from PySide6.QtCore import Qt

from console import style

from console.panels.tool_calls import (AGENT_COLUMN, PARAMS_COLUMN, STATUS_COLUMN, TOOL_COLUMN, PermissionsDialog,
                                       ToolCallsPanel)
from engine.gateway.tools import ToolStatus
from engine.types import ToolRequest

from .test_memory_panel import HOSTILE, TIMEOUT_MS, confirm, running, run  # noqa: F401 (running: a fixture)

DISPLAY, FOREGROUND, TOOLTIP = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole


def email(to: str = "someone@example.org", subject: str = "Daily summary", body: str = "Mars has two moons.") -> ToolRequest:
    return ToolRequest("send_email", {"to": to, "subject": subject, "body": body})


def call(qtbot, engine, agent: str, request: ToolRequest, trace_id: str = "t1"):
    return run(qtbot, engine.parts.tools.handle(agent, request, trace_id))


def reload(qtbot, service) -> None:
    with qtbot.waitSignal(service.tools.sig_loaded, timeout=TIMEOUT_MS):
        service.tools.load()


def cell(panel: ToolCallsPanel, row: int, column: int, role=DISPLAY):
    return panel.model.data(panel.model.index(row, column), role)


def rows(panel: ToolCallsPanel) -> list[tuple[str, str, str]]:
    """(agent, tool, status) of every row, as the table shows them."""
    return [(cell(panel, r, AGENT_COLUMN), cell(panel, r, TOOL_COLUMN), cell(panel, r, STATUS_COLUMN))
            for r in range(panel.model.rowCount())]


def test_a_pending_send_email_is_listed_first_and_counted_in_the_tab_title(qtbot, running):
    engine, service, window = running
    panel = window.tools_panel
    assert window.dock_title("tools") == "Tools" and panel.model.rowCount() == 0
    refused = call(qtbot, engine, "gen-b", email())                         # not in gen-b's allowed_tools
    pending = call(qtbot, engine, "gen-a", email())
    done = call(qtbot, engine, "gen-a", ToolRequest("memory.write", {"key": "style", "content": "Distances in kilometres, astronomical units for planets."}))
    assert (refused.status, pending.status, done.status) == (ToolStatus.REFUSED, ToolStatus.PENDING, ToolStatus.DONE)
    reload(qtbot, service)

    assert rows(panel) == [("gen-a", "send_email", "pending"), ("gen-a", "memory.write", "done"),
                           ("gen-b", "send_email", "refused")]                 # pending first, then newest first
    assert [cell(panel, r, STATUS_COLUMN, FOREGROUND) for r in range(3)] == [style.tones().warn, style.tones().good, style.tones().bad]
    assert json.loads(cell(panel, 0, PARAMS_COLUMN)) == {"body": "Mars has two moons.", "subject": "Daily summary",
                                                         "to": "someone@example.org"}
    assert window.dock_title("tools") == "Tools (1 pending)"
    assert window.needs_attention("tools")
    assert panel.summary.text() == f"3 call(s): 1 pending · 1 done · 1 refused · deciding as {service.operator}"
    assert panel.current_call().id == pending.call_id                      # the first pending call is selected
    details = panel.details.toPlainText()
    assert details.startswith(f"#{pending.call_id} · send_email asked by gen-a · PENDING")
    assert "gen-a is in approval mode" in details and '"to": "someone@example.org"' in details
    assert panel.approve_button.isEnabled() and panel.reject_button.isEnabled()
    panel.select_call(refused.call_id)
    assert not panel.approve_button.isEnabled() and "may not use send_email" in panel.details.toPlainText()

    call(qtbot, engine, "gen-a", email(to="finance@example.org"))
    reload(qtbot, service)
    assert window.dock_title("tools") == "Tools (2 pending)"
    assert panel.current_call().id == refused.call_id          # the operator's selection stays


def test_approving_with_a_reason_writes_the_outbox_and_moves_the_call_to_approved(qtbot, running):
    engine, service, window = running
    panel = window.tools_panel
    pending = call(qtbot, engine, "gen-a", email())
    reload(qtbot, service)
    assert panel.outbox.rowCount() == 0 and panel.outbox_title.text().startswith("Outbox — empty")

    qtbot.mouseClick(panel.approve_button, Qt.MouseButton.LeftButton)
    dialog = panel.dialog
    assert dialog.isVisible() and not dialog.ok_button.isEnabled()           # a reason is required
    assert "someone@example.org" in dialog.consequence.text() and "never sends mail" in dialog.consequence.text()
    with qtbot.waitSignal(service.tools.sig_changed, timeout=TIMEOUT_MS) as changed:
        confirm(qtbot, panel, "checked the recipient and the text", service.tools.sig_loaded)
    assert changed.args[0].status is ToolStatus.APPROVED

    assert rows(panel) == [("gen-a", "send_email", "approved")]
    assert cell(panel, 0, STATUS_COLUMN, FOREGROUND) == style.tones().good
    assert window.dock_title("tools") == "Tools"
    mail = panel.outbox.records()
    assert [(m.tool_call_id, m.recipient, m.subject, m.body) for m in mail] == [
        (pending.call_id, "someone@example.org", "Daily summary", "Mars has two moons.")]
    assert panel.outbox_title.text() == "Outbox — 1 e-mail(s) written, never sent"
    details = panel.details.toPlainText()
    assert f"Decision: approved by {service.operator} at " in details
    assert details.endswith(": checked the recipient and the text\n\nParameters (as the agent asked, screened):\n"
                            "{\n  \"body\": \"Mars has two moons.\",\n  \"subject\": \"Daily summary\",\n"
                            "  \"to\": \"someone@example.org\"\n}\n\nResult:\n"
                            f"e-mail to someone@example.org written to the outbox (#{mail[0].id}); not sent")
    assert panel.message.text().startswith(f"#{pending.call_id} send_email by gen-a: approved by {service.operator}")
    assert not panel.approve_button.isEnabled()                                 # a decision is final


def test_rejecting_without_a_reason_is_refused_and_with_one_drops_the_call(qtbot, running):
    engine, service, window = running
    panel = window.tools_panel
    errors = []
    service.sig_error.connect(errors.append)
    first = call(qtbot, engine, "gen-a", email())
    second = call(qtbot, engine, "gen-a", email(to="finance@example.org"))
    reload(qtbot, service)
    assert window.dock_title("tools") == "Tools (2 pending)"

    qtbot.mouseClick(panel.reject_button, Qt.MouseButton.LeftButton)
    dialog = panel.dialog
    dialog.reason.setText("  \t ")
    assert not dialog.ok_button.isEnabled()
    qtbot.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)              # disabled: nothing happens
    assert panel.dialog is dialog and dialog.isVisible()
    dialog.reject()
    # The service refuses it too (the engine says why), and the call stays pending.
    with qtbot.waitSignal(service.tools.sig_failed, timeout=TIMEOUT_MS) as failed:
        service.tools.decide(first.call_id, False, "  ")
    message = (f"rejection refused: an empty reason: say why tool call #{first.call_id} is rejected, it goes into "
               f"the audit trail")
    assert failed.args == [first.call_id, message] and errors == [message]
    qtbot.waitUntil(lambda: panel.message.text() == f"#{first.call_id}: {message}", timeout=TIMEOUT_MS)
    assert (run(qtbot, engine.parts.tools.get(first.call_id))).status is ToolStatus.PENDING

    assert panel.select_call(first.call_id)
    qtbot.mouseClick(panel.reject_button, Qt.MouseButton.LeftButton)
    confirm(qtbot, panel, "not a recipient this agent writes to", service.tools.sig_loaded)
    assert rows(panel) == [("gen-a", "send_email", "pending"), ("gen-a", "send_email", "rejected")]
    assert cell(panel, 1, STATUS_COLUMN, FOREGROUND) == style.tones().muted
    assert panel.current_call().id == first.call_id and panel.outbox.rowCount() == 0
    assert window.dock_title("tools") == "Tools (1 pending)"

    # A decision is final: deciding it again is refused, and says so.
    with qtbot.waitSignal(service.tools.sig_failed, timeout=TIMEOUT_MS) as failed:
        service.tools.decide(first.call_id, True, "changed my mind")
    assert failed.args[1] == (f"approval refused: tool call #{first.call_id} is rejected by {service.operator}, "
                              f"not pending; a decision is final")
    assert second.status is ToolStatus.PENDING


def test_an_agents_markup_in_parameters_stays_literal(qtbot, running):
    engine, service, window = running
    panel = window.tools_panel
    result = call(qtbot, engine, "gen-a", email(subject=f"Report {HOSTILE}", body=f"See {HOSTILE} here."))
    assert result.status is ToolStatus.PENDING
    reload(qtbot, service)
    assert HOSTILE in cell(panel, 0, PARAMS_COLUMN)
    tooltip = cell(panel, 0, PARAMS_COLUMN, TOOLTIP)
    assert html.escape(f"See {HOSTILE} here.", quote=True) in tooltip or html.escape(HOSTILE) in tooltip
    assert "<b>x" not in tooltip and "<a href" not in tooltip
    assert f'"subject": "Report {HOSTILE}"' in panel.details.toPlainText()
    qtbot.mouseClick(panel.approve_button, Qt.MouseButton.LeftButton)
    assert panel.dialog.consequence.textFormat() == Qt.TextFormat.PlainText
    assert f"Report {HOSTILE}" in panel.dialog.consequence.text()
    panel.dialog.reject()


def test_the_permission_matrix_is_shown_read_only(qtbot, running):
    _engine, service, window = running
    dialog = window.tools_panel.show_permissions()
    assert isinstance(dialog, PermissionsDialog) and dialog.isVisible()
    model = dialog.model
    table = [[model.data(model.index(r, c)) for c in range(model.columnCount())] for r in range(model.rowCount())]
    assert table == [["gen-a", "generator", "memory.write, memory.read, send_email", "own", "yes", "—"],
                     ["gen-b", "generator", "memory.write, memory.read", "own", "yes", "—"]]
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())] == [
        "Agent", "Role", "Tools", "Memory", "Approval mode", "Can send to"]
    text = dialog.policies.text()
    assert "send_email: domains example.org" in text
    assert "Not in the matrix (may do nothing): ret-e5, ret-bm25, ret-rogue, gen-liar" in text
    assert not model.flags(model.index(0, 0)) & Qt.ItemFlag.ItemIsEditable
    dialog.close()


def test_the_tool_call_models_pass_qt_model_tester(qtbot, qtmodeltester, running):
    engine, service, window = running
    panel = window.tools_panel
    call(qtbot, engine, "gen-a", email())
    call(qtbot, engine, "gen-b", email())
    approved = call(qtbot, engine, "gen-a", email(to="ops@example.org"))
    run(qtbot, engine.tools.decide(approved.call_id, True, "test", "fine"))
    reload(qtbot, service)
    qtmodeltester.check(panel.model)
    qtmodeltester.check(panel.outbox)
