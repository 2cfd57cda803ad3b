"""How text that agents and documents wrote leaves Quorum: onto a screen, a terminal, a log line or a CSV cell.

Everything an agent or a document says is data. Shown to a person it must read as what it is: its characters,
never markup, a link, a terminal escape sequence, a forged line or a spreadsheet formula. Every way out uses
one of these functions; the console's widgets build on them (console/untrusted.py).

- visible(text): for a plain-text pane. Line breaks and tabs are kept; every character a reader would not see
  or that would act on the text around it (ESC, bidi overrides, zero-width and tag characters, C1 controls)
  is named instead, e.g. ⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩.
- one_line(text, limit): the same for a cell or a one-line label; a line break shows as ↵.
- quoted(text): for a terminal or a log line: like a Python string literal's body (\\n, \\x1b, \\u202e, \\\\).
- quoted_cut(text, limit): quoted(), cut for a table column.
- csv_cell(text): a cell a spreadsheet would run as a formula (= + - @ tab CR first) is opened with '.
- csv_text(text): a CSV text cell: acting characters escaped (terminal_safe), then csv_cell.
"""
from __future__ import annotations

import io
import logging
import unicodedata
from typing import TextIO

LINE_BREAK_MARK = "↵"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# What a terminal acts on: C0 controls but line feed, tab and carriage return (our own progress bars redraw
# with \r), DEL and C1 (U+009B is a one-character CSI), and the format characters that reorder or hide text.
_TERMINAL_KEEPS = frozenset("\n\t\r")


def _shows_as_itself(ch: str) -> bool:
    """Printable, or a space of any width (no-break, thin, ideographic): it reads as a space and hides nothing."""
    return ch.isprintable() or unicodedata.category(ch) == "Zs"


def _named(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"⟨U+{ord(ch):04X}{' ' + name if name else ''}⟩"


def visible(text: str) -> str:
    """`text` for a plain-text pane: line breaks and tabs kept, every other character a reader would not see
    named in brackets, so nothing is hidden and nothing reorders the text around it."""
    text = text.replace("\r\n", "\n")
    out = []
    for ch in text:
        if ch in "\n\t" or _shows_as_itself(ch):
            out.append(ch)
        else:
            out.append(_named(ch))
    return "".join(out)


def one_line(text: str, limit: int | None = None) -> str:
    """`text` for a table cell or a one-line label: visible(), a line break shown as ↵ and tabs as spaces,
    cut at `limit` characters with an ellipsis."""
    shown = visible(text.strip()).replace("\n", f" {LINE_BREAK_MARK} ").replace("\t", " ")
    if limit is not None and len(shown) > limit:
        shown = shown[: max(1, limit - 1)].rstrip() + "…"
    return shown


def quoted(text: str) -> str:
    """`text` for a terminal or a log line: one line, every control and invisible character escaped the way
    a Python literal writes it, so no escape sequence runs and no line can be forged."""
    out = []
    for ch in text:
        if ch == "\\":                 # doubled, so a written "\\n" never reads like an escaped line break
            out.append("\\\\")
        elif _shows_as_itself(ch):
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(_escape(ord(ch)))
    return "".join(out)


def _escape(code: int) -> str:
    """\\x1b for C0 controls, \\uXXXX (a surrogate pair beyond the BMP) for the rest: the same notation is valid
    inside a JSON string, so JSON printed through TerminalStream stays JSON with the same value."""
    if code < 0x20:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def quoted_cut(text: str, limit: int) -> str:
    """quoted() for a table column: at most `limit` characters, "…" where it was cut, never inside an escape."""
    shown = quoted(text)
    if len(shown) <= limit:
        return shown
    out, used = [], 0
    for piece in map(quoted, text):
        if used + len(piece) > limit - 1:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out) + "…"


def csv_cell(text: str) -> str:
    """A text cell a spreadsheet would run as a formula, opened with an apostrophe so it reads as text."""
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_text(text: str) -> str:
    """A CSV text cell: characters that act escaped as terminal_safe() writes them, then a formula defused. Inside
    a JSON cell the escapes sit in JSON strings, where they mean the same characters: the JSON read back holds
    the same value."""
    return csv_cell(terminal_safe(text))


def terminal_safe(text: str) -> str:
    """Multi-line text for a terminal: line breaks, tabs and carriage returns kept (this is the program's own
    layout), every other control and invisible character escaped as quoted() does."""
    return "".join(ch if ch in _TERMINAL_KEEPS or _shows_as_itself(ch) else quoted(ch) for ch in text)


class TerminalStream(io.TextIOBase):
    """A text stream that passes every write through terminal_safe(): whatever a command prints, no escape
    sequence or bidi override reaches the terminal raw. main.py wraps stdout and stderr in it."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, s: str) -> int:
        self.raw.write(terminal_safe(s))
        return len(s)

    def flush(self) -> None:
        self.raw.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:                  # type: ignore[override]
        return getattr(self.raw, "encoding", "utf-8")


class QuotedFormatter(logging.Formatter):
    """Log lines whose message is quoted(): an agent id, reason or answer with a newline or an escape sequence
    stays on its own line and cannot draw a forged one. A traceback keeps its lines, each made terminal_safe."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = quoted(record.message)
        return super().formatMessage(record)

    def formatException(self, ei) -> str:
        return terminal_safe(super().formatException(ei))


def quoted_log_handler(fmt: str = logging.BASIC_FORMAT, stream: TextIO | None = None) -> logging.Handler:
    """A stderr (or `stream`) handler whose lines are QuotedFormatter(fmt)'s: hand it to logging.basicConfig
    (handlers=[...]) so every log line of the process is one line, whatever text its message carries."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(QuotedFormatter(fmt))
    return handler


def guard_terminal() -> None:
    """Wraps this process's stdout and stderr in TerminalStream (once)."""
    import sys
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, TerminalStream):
            setattr(sys, name, TerminalStream(stream))
