"""Where the console keeps what it remembers between runs: window geometry, dock layout, theme and
the demo traffic switch. Layout only: data stays in the engine's store.

An INI file in the user's config dir (QSettings' user scope, organisation "Quorum"); tests point the
user scope at a temporary folder with QSettings.setPath before making a window.
"""
from __future__ import annotations

from PySide6.QtCore import QSettings

ORGANISATION = "Quorum"
APPLICATION = "console"


def console_settings() -> QSettings:
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)
