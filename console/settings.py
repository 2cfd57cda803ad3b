"""Where the console keeps what it remembers between runs: window geometry, dock layout, theme and
the demo traffic switch. Layout only: data stays in the engine's store.

An INI file in the user's config dir (QSettings' user scope, organisation "Quorum"), or the file
$QUORUM_SETTINGS names; tests point the user scope at a temporary folder with QSettings.setPath before
making a window.
"""
from __future__ import annotations

import os

from PySide6.QtCore import QSettings

ORGANISATION = "Quorum"
APPLICATION = "console"


SETTINGS_ENV = "QUORUM_SETTINGS"       # an INI file of one's own, as QUORUM_DB is a database of one's own


def console_settings() -> QSettings:
    path = os.environ.get(SETTINGS_ENV, "").strip()
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)


def use_scratch_settings(folder, *, demo_traffic: bool = False) -> None:
    """Scripted runs (screenshots, benchmarks): the first-start layout in `folder`, never the operator's
    saved one, and no demo traffic of its own unless asked (the script asks its own questions)."""
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    settings = console_settings()
    settings.setValue("demo/enabled", demo_traffic)
    settings.sync()
