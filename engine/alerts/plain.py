"""Agent-supplied text made safe to print on one line of a terminal or a table cell.

An alert quotes what an agent carried, and an agent may be hostile: ANSI escapes could repaint a
terminal, control characters move the cursor, bidi overrides and zero-width characters hide or reorder
text. They are removed (not rendered), whitespace is collapsed, and the result is cut to a length.
"""
from __future__ import annotations

import re
import unicodedata

# CSI sequences (ESC [ ... final byte), OSC sequences (ESC ] ... BEL or ESC \), and any other ESC + one char.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")


def plain(text: str, limit: int | None = None) -> str:
    """One printable line: escapes, control and format characters dropped, whitespace collapsed,
    at most `limit` characters ("…" where it was cut)."""
    text = _ANSI.sub("", str(text))
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch.isspace():
            kept.append(" ")
        elif category in ("Cc", "Cf", "Cs", "Co"):   # controls, format (bidi, zero-width), surrogates, private
            continue
        else:
            kept.append(ch)
    line = " ".join("".join(kept).split())
    if limit is not None and len(line) > limit:
        line = line[:max(limit - 1, 0)] + "…"
    return line
