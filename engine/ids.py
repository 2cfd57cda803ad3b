"""Row ids as people type them ("12" or "#12"): alerts, silences, memory entries and snapshots."""
from __future__ import annotations

from typing import Any

from .errors import InputError


def row_id(value: Any, what: str) -> int:
    """An id as people type it ("12" or "#12"); `what` names it in the error ("alert", "snapshot")."""
    if isinstance(value, bool):
        raise InputError(f"{what} id {value!r} is not a number")
    try:
        number = int(str(value).strip().lstrip("#"))
    except ValueError:
        raise InputError(f"{what} id {value!r} is not a number") from None
    if number <= 0:
        raise InputError(f"{what} id {value!r} is not a positive number")
    return number
