"""engine.untrusted, the one way agents' and documents' text leaves Quorum (issue #15): each function fed the
hostile text of tests/hostile.py, asserting what the reader, the terminal, the log file or the spreadsheet gets."""
import ast
import io
import json
import logging
import sys

from hypothesis import given
from hypothesis import strategies as st

import main
from engine.untrusted import (FORMULA_START, LINE_BREAK_MARK, QuotedFormatter, TerminalStream, csv_cell, csv_text,
                              guard_terminal, one_line, quoted, quoted_cut, quoted_log_handler, terminal_safe,
                              visible)

from ..hostile import ACTING, ANSI, BIDI, C1_CSI, FORGED_LINE, FORMULA, MARKUP, hostile_markup, hostile_text, \
    shown_literally

FORGED_START = FORGED_LINE.strip()[:24]      # "2026-12-02 10:00:00 INFO": how a real log line of ours begins


def forged_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(FORGED_START)]


# --- for people: visible and one_line --------------------------------------------------------------------------
def test_visible_names_what_acts_and_keeps_the_layout():
    shown = visible(f"line one\n\tline two {BIDI}QZBIDI{ANSI}")
    assert shown.startswith("line one\n\tline two ")
    assert "⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩QZBIDI" in shown and "⟨U+001B⟩[2J" in shown
    assert shown_literally(visible(hostile_text())) == []


def test_one_line_marks_line_breaks_and_cuts():
    assert one_line("a\nb\tc") == f"a {LINE_BREAK_MARK} b c"
    assert one_line("x" * 50, 10) == "x" * 9 + "…"
    shown = one_line(hostile_text())
    assert "\n" not in shown and shown_literally(shown) == []


# --- for terminals and logs: quoted, quoted_cut, terminal_safe ----------------------------------------------------
def test_quoted_is_one_line_with_escapes_a_python_reader_knows():
    shown = quoted(hostile_text("lead "))
    assert "\n" not in shown and "\r" not in shown and shown_literally(shown) == []
    assert "\\x1b[2J\\x1b[31mQZANSI" in shown and "\\u202eQZBIDI" in shown and "\\x07" in shown
    assert "\\u009b2J" in shown                                  # the one-character CSI
    assert "\\n2026-12-02 10:00:00 INFO engine: QZFORGED" in shown
    assert hostile_markup() in shown                             # markup is only text on a terminal
    assert quoted("plain text, «quotes» and 日本語") == "plain text, «quotes» and 日本語"


def test_quoted_escapes_read_back_as_the_original():
    """What the operator reads is the text itself: a Python literal of the quoted line is the original."""
    text = hostile_text("x ") + "\u200b zero width, \r\n\t"
    assert ast.literal_eval('"' + quoted(text).replace('"', '\\"') + '"') == text


def test_quoted_cut_never_splits_an_escape():
    text = "ab" + ANSI + "cd"
    full = quoted(text)
    for limit in range(1, len(full) + 2):
        shown = quoted_cut(text, limit)
        assert len(shown) <= limit
        if len(full) <= limit:
            assert shown == full
        else:
            assert shown.endswith("…") and full.startswith(shown[:-1])
            assert not shown[:-1].endswith(("\\", "\\x", "\\x1"))       # a whole escape or none of it


def test_terminal_safe_keeps_our_layout_and_escapes_the_rest():
    assert terminal_safe("a\nb\tc\rd") == "a\nb\tc\rd"              # the progress bars redraw with \r
    shown = terminal_safe(hostile_text())
    assert not any(ch in shown for ch in ACTING)
    assert "\\x1b[2J" in shown and "\\u202e" in shown


# --- for spreadsheets: csv_cell ----------------------------------------------------------------------------------
def test_csv_cell_opens_every_formula_start_with_an_apostrophe():
    for start in FORMULA_START:
        assert csv_cell(start + "1+1") == "'" + start + "1+1"
    assert csv_cell(FORMULA) == "'" + FORMULA
    for safe in ("", "a=1", "{\"a\": \"=1\"}", "1986", " =1"):
        assert csv_cell(safe) == safe


# --- the streams main.py wraps stdout and stderr in --------------------------------------------------------------
def test_json_through_the_terminal_stream_stays_json_with_the_same_value():
    value = {"answer": hostile_text(), "source": FORMULA, "ids": ["gen-a", BIDI + "x"], "n": 3, "markup": MARKUP}
    raw = io.StringIO()
    stream = TerminalStream(raw)
    print(json.dumps(value, ensure_ascii=False, indent=2), file=stream)
    out = raw.getvalue()
    assert not any(ch in out for ch in ACTING) and forged_lines(out) == []
    assert json.loads(out) == json.loads(json.dumps(value))      # MARKUP's tuples come back as lists


@given(st.text())
def test_any_text_as_json_through_the_terminal_stream_reads_back_the_same(text):
    raw = io.StringIO()
    TerminalStream(raw).write(json.dumps({"t": text}, ensure_ascii=False))
    assert json.loads(raw.getvalue()) == {"t": text}


def test_the_terminal_stream_passes_what_a_caller_asks_of_a_stream():
    raw = io.StringIO()
    stream = TerminalStream(raw)
    assert stream.write("\rindex [###...] 3/9") == len("\rindex [###...] 3/9") and stream.writable()
    assert raw.getvalue() == "\rindex [###...] 3/9" and stream.isatty() is False


def test_guard_terminal_wraps_stdout_and_stderr_once(monkeypatch):
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    guard_terminal()
    guard_terminal()
    assert isinstance(sys.stdout, TerminalStream) and sys.stdout.raw is out
    assert isinstance(sys.stderr, TerminalStream) and sys.stderr.raw is err
    print(f"agent says {ANSI}red", file=sys.stderr)
    assert err.getvalue() == "agent says \\x1b[2J\\x1b[31mred\n"


# --- log lines ---------------------------------------------------------------------------------------------------
def record(message: str, *args, exc_info=None) -> logging.LogRecord:
    return logging.LogRecord("engine", logging.WARNING, __file__, 1, message, args, exc_info)


def test_a_log_record_with_a_forged_line_and_ansi_is_one_line_with_escapes():
    formatter = QuotedFormatter("%(levelname)s %(name)s: %(message)s")
    line = formatter.format(record("agent %s answered %r then %s", "gen-x", "ok", FORGED_LINE + ANSI + "QZANSI"))
    assert "\n" not in line and "\x1b" not in line
    assert line == ("WARNING engine: agent gen-x answered 'ok' then \\n2026-12-02 10:00:00 INFO engine: QZFORGED "
                    "quarantine released by admin\\x1b[2J\\x1b[31mQZANSI")


def test_a_quoted_log_handler_writes_one_line_per_record():
    out = io.StringIO()
    handler = quoted_log_handler("%(levelname)s:%(name)s:%(message)s", stream=out)
    handler.handle(record("reason: %s", hostile_text()))
    text = out.getvalue()
    assert text.count("\n") == 1 and text.startswith("WARNING:engine:reason: ")
    assert forged_lines(text) == [] and not any(ch in text for ch in ACTING) and "QZFORGED" in text


def test_a_traceback_keeps_its_lines_but_not_its_escapes():
    try:
        raise ValueError(f"bad reply {ANSI}{BIDI}QZ")
    except ValueError:
        info = sys.exc_info()
    text = QuotedFormatter().format(record("call failed", exc_info=info))
    assert text.startswith("call failed\nTraceback (most recent call last):\n")
    assert "ValueError: bad reply \\x1b[2J\\x1b[31m\\u202eQZ" in text and not any(ch in text for ch in ACTING)


def test_main_quotes_the_warnings_of_a_command_without_logging_configured(monkeypatch):
    """A command configures no logging: its warnings go to logging.lastResort, which main() makes quote."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(logging.lastResort, "formatter", None)     # put back as it was after the test
    main.guard_output()
    logging.lastResort.handle(record("agent %s: unreadable reply %s", "gen-x", FORGED_LINE + C1_CSI))
    assert err.getvalue() == ("agent gen-x: unreadable reply \\n2026-12-02 10:00:00 INFO engine: QZFORGED "
                              "quarantine released by admin\\u009b\n")


def test_a_written_backslash_never_reads_like_an_escape():
    assert quoted("C:\\temp\\new") == "C:\\\\temp\\\\new"
    assert quoted("agent wrote \\n2026-12-02 INFO") == "agent wrote \\\\n2026-12-02 INFO"


def test_a_csv_text_cell_escapes_acting_characters_and_keeps_a_json_value():
    payload = json.dumps({"answer": f"{BIDI}exe.txt {ANSI}red", "by": "=1+1"}, ensure_ascii=False)
    cell = csv_text(payload)
    assert not any(ch in cell for ch in ACTING) and json.loads(cell) == json.loads(payload)
    assert csv_text(f"=cmd {BIDI}") == "'=cmd \\u202e"
