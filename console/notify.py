"""Desktop notifications for new critical alerts that no silence mutes.

`Notifier.on_raised(alerts)` takes every batch of new alerts (the alerts adapter's sig_raised); an alert
notifies when it is CRITICAL and loud (open, not muted: a silence mutes notification, never detection).
Each notification goes to one backend, chosen once:

    tray         QSystemTrayIcon.showMessage, when the desktop has a system tray
    notify-send  the freedesktop command, when it is on PATH: run without waiting, its arguments a list
                 (never a shell), after "--" so a message cannot pass for an option
    log          nothing on the desktop, a log line

and always to `sig_notified(str)`, one plain line the window shows as its own toast.

A storm must not flood the desktop: at most one notification per (kind, agent) per window (a minute),
and at most MAX_PER_WINDOW in all. What is held back is counted and said with the next one for its key
("… (and 4 more)"), which a timer sends as soon as the window allows. Agents' text is made plain (no
escapes, control or bidi characters) and shortened; for notify-send, whose servers read markup, it is
also escaped, so a message can never become a link or an image.
"""
from __future__ import annotations

import collections
import html
import logging
import shutil
import subprocess
import time
from typing import Callable, Iterable, Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QStyle, QSystemTrayIcon

from engine import AlertRow, Severity, alert_plain, label_of

from .untrusted import visible

log = logging.getLogger("console.notify")

WINDOW_S = 60.0             # one notification per kind and agent per minute at most
MAX_PER_WINDOW = 5          # and this many in all, whatever the kinds and agents
TITLE_CHARS = 80
BODY_CHARS = 240
TRAY_SHOW_MS = 10_000
SEEN_IDS = 2000             # ids remembered, so an alert delivered twice notifies once
Key = tuple[str, str]       # (kind, agent_id)


class Backend(Protocol):
    name: str

    def show(self, title: str, body: str) -> None:
        """Shows one notification without blocking; never raises."""


class TrayBackend:
    """The system tray's balloon. The icon appears with the first notification."""

    name = "tray"

    def __init__(self, parent: QObject | None = None) -> None:
        self._parent = parent
        self._tray: QSystemTrayIcon | None = None

    def show(self, title: str, body: str) -> None:
        if self._tray is None:
            self._tray = QSystemTrayIcon(_app_icon(), self._parent)
            self._tray.setToolTip("Quorum")
            self._tray.show()
        self._tray.showMessage(title, body, QSystemTrayIcon.MessageIcon.Critical, TRAY_SHOW_MS)


class NotifySendBackend:
    """`notify-send`, started and not waited for (finished ones are reaped on the next call)."""

    name = "notify-send"

    def __init__(self, program: str, run: Callable[..., subprocess.Popen] = subprocess.Popen) -> None:
        self.program = program
        self._run = run
        self._running: list[subprocess.Popen] = []

    def command(self, title: str, body: str) -> list[str]:
        # Notification servers read the body as markup: escaped, an agent's "<a href>" stays text.
        # notify-send reads the body as markup: escaped, and its hidden characters named.
        return [self.program, "--app-name=Quorum", "--urgency=critical", "--", visible(title),
                html.escape(visible(body), quote=False)]

    def show(self, title: str, body: str) -> None:
        self._running = [p for p in self._running if p.poll() is None]
        try:
            self._running.append(self._run(self.command(title, body), stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           close_fds=True, start_new_session=True))
        except OSError as exc:
            log.warning("notify-send could not be started: %s", exc)


class LogBackend:
    """No desktop notifications here: a log line, and the window's toast."""

    name = "log"

    def show(self, title: str, body: str) -> None:
        log.info("notification: %s: %s", title, body)


def choose_backend(parent: QObject | None = None, *, tray_available: bool | None = None,
                   which: Callable[[str], str | None] = shutil.which) -> Backend:
    """The tray when there is one, else notify-send when it is on PATH, else a log line."""
    if QSystemTrayIcon.isSystemTrayAvailable() if tray_available is None else tray_available:
        return TrayBackend(parent)
    program = which("notify-send")
    if program:
        return NotifySendBackend(program)
    return LogBackend()


def notifies(alert: AlertRow) -> bool:
    """Critical, open and not muted by a silence."""
    return alert.severity is Severity.CRITICAL and alert.loud


def title_of(alert: AlertRow) -> str:
    agent = alert_plain(alert.agent_id, 40) or "engine"
    return alert_plain(f"Quorum: {label_of(alert.kind)} — {agent}", TITLE_CHARS)


def body_of(alert: AlertRow, more: int) -> str:
    extra = f" (and {more} more)" if more else ""
    return alert_plain(alert.message, BODY_CHARS - len(extra)) + extra


class Notifier(QObject):
    sig_notified = Signal(str)             # one plain line per notification sent, for the window's toast

    def __init__(self, backend: Backend | None = None, *, clock: Callable[[], float] = time.monotonic,
                 window_s: float = WINDOW_S, max_per_window: int = MAX_PER_WINDOW,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend if backend is not None else choose_backend(self)
        self._clock = clock
        self._window = float(window_s)
        self._max = int(max_per_window)
        self._last_sent: dict[Key, float] = {}
        self._sent_at: collections.deque[float] = collections.deque()
        self._held: dict[Key, list[AlertRow]] = {}
        self._seen: collections.OrderedDict[int, None] = collections.OrderedDict()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.flush_due)
        log.info("desktop notifications through %s", self.backend.name)

    # --- in ----------------------------------------------------------------------------------
    def on_raised(self, alerts: Iterable[AlertRow]) -> None:
        """New alerts (muted ones too: they are skipped here). Sends what the limits allow, holds the rest."""
        now = self._clock()
        for alert in alerts:
            if notifies(alert) and self._first_time(alert.id):
                self._held.setdefault((alert.kind, alert.agent_id), []).append(alert)
        self._send_due(now)

    def flush_due(self) -> None:
        """Sends what was held back once its window allows (the timer calls it)."""
        self._send_due(self._clock())

    def held(self) -> int:
        return sum(len(group) for group in self._held.values())

    # --- limits --------------------------------------------------------------------------------
    def _first_time(self, alert_id: int) -> bool:
        if alert_id in self._seen:
            return False
        self._seen[alert_id] = None
        while len(self._seen) > SEEN_IDS:
            self._seen.popitem(last=False)
        return True

    def _room(self, now: float) -> int:
        while self._sent_at and now - self._sent_at[0] >= self._window:
            self._sent_at.popleft()
        return self._max - len(self._sent_at)

    def _key_free_at(self, key: Key) -> float:
        last = self._last_sent.get(key)
        return float("-inf") if last is None else last + self._window

    def _send_due(self, now: float) -> None:
        for key in sorted(self._held, key=self._key_free_at):        # the longest-waiting keys first
            if self._room(now) <= 0:
                break
            if self._key_free_at(key) <= now:
                group = self._held.pop(key)
                self._send(key, group[-1], len(group) - 1, now)
        self._arm(now)

    def _send(self, key: Key, alert: AlertRow, more: int, now: float) -> None:
        self._last_sent[key] = now
        self._sent_at.append(now)
        title, body = title_of(alert), body_of(alert, more)
        try:
            self.backend.show(title, body)
        except Exception:   # noqa: BLE001 - a notification must never break the console
            log.warning("the %s notification failed", self.backend.name, exc_info=True)
        self.sig_notified.emit(f"{title}: {body}")

    def _arm(self, now: float) -> None:
        """The timer wakes when the first held key may be sent (its own window and the overall one)."""
        if not self._held:
            self._timer.stop()
            return
        at = min(self._key_free_at(key) for key in self._held)
        if self._room(now) <= 0:
            at = max(at, self._sent_at[0] + self._window)
        self._timer.start(int(max(0.0, at - now) * 1000) + 1)


def _app_icon() -> QIcon:
    app = QApplication.instance()
    if app is None:
        return QIcon()
    icon = app.windowIcon()
    return icon if not icon.isNull() else app.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
