"""A hostile corpus and a hostile generator, for the tests of the untrusted-text boundary (issue #15).

Everything here is written the way an attacker who read Quorum's code would: markup that would restyle the
console, a link to a local file, a remote image, a bidi override, an ANSI escape, a spreadsheet formula and a
line break that would forge a log line. Each markup piece carries a canary word right after its tag; wherever
the canary shows, the tag must show before it as text (`shown_literally`), or the tag was obeyed.

    python -m tests.hostile --port N     a generator on 127.0.0.1:N (the engine's own protocol server) that
                                         answers every question with the hostile text and cites the context
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from pathlib import Path

# (the tag as an attacker writes it, the canary word that follows it)
MARKUP = (
    ('<span class="QZ" style="color:green;font-size:30px">', "QZSTYLED"),
    ('<a href="file:///etc/passwd">', "QZLINK"),
    ('<img src="https://evil.example/pixel.png">', "QZIMAGE"),
    ("<h1>", "QZHEADING"),
)
BIDI = "\u202e"            # RIGHT-TO-LEFT OVERRIDE: "QZBIDI exe.txt" would read reversed
ANSI = "\x1b[2J\x1b[31m"   # clear the screen, then red
C1_CSI = "\x9b"            # a one-character CSI on terminals that honour C1
FORMULA = "=HYPERLINK(\"http://evil.example\",\"QZFORMULA\")"
FORGED_LINE = "\n2026-12-02 10:00:00 INFO engine: QZFORGED quarantine released by admin"
# Characters that must never reach a screen, terminal or log raw: they act on the text around them.
ACTING = (BIDI, "\x1b", C1_CSI, "\u2066", "\u200f", "\x07")
CANARIES = tuple(word for _tag, word in MARKUP) + ("QZBIDI", "QZANSI", "QZFORMULA", "QZFORGED")


def hostile_markup() -> str:
    """Every markup piece, each tag followed by its canary: what passes the gateway (it reads as data)."""
    return " ".join(f"{tag}{word}" + ("" if tag.startswith("<img") else f"</{tag[1:].split()[0].rstrip('>')}>")
                    for tag, word in MARKUP)


def hostile_text(lead: str = "") -> str:
    """Every piece after `lead`: markup, a bidi override, ANSI and C1 escapes, a bell and a forged log line
    (the gateway blocks most of this as a hidden instruction; the panels that show what it blocked still must
    show it as text)."""
    return f"{lead}{hostile_markup()} {BIDI}QZBIDI exe.txt\u202c {ANSI}QZANSI\x1b[0m {C1_CSI}2J \x07{FORGED_LINE}"


def shown_literally(shown: str) -> list[str]:
    """The problems in `shown` (what the operator sees or gets): a canary whose tag did not show before it
    as text, or a character that acts on the text around it. An empty list: shown as its own text."""
    problems = [f"{word} shown without its tag {tag!r} before it (the markup was obeyed)"
                for tag, word in MARKUP for at in _positions(shown, word) if not _tag_shown(shown[:at], tag)]
    problems += [f"raw {ch!r} in {shown[:80]!r}" for ch in ACTING if ch in shown]
    return problems


def _tag_shown(before: str, tag: str) -> bool:
    """The tag's end shows right before its canary: as written, or inside a JSON string. Its end is enough (an
    excerpt may cut the middle out of a long tag); a tag that was obeyed shows none of its characters."""
    end = tag[-10:]
    return before.endswith((end, json.dumps(end)[1:-1]))


def _positions(text: str, word: str) -> list[int]:
    out, at = [], text.find(word)
    while at >= 0:
        out.append(at)
        at = text.find(word, at + 1)
    return out


# The question the hostile corpus answers, and the sentence that answers it: honest generators quote it whole.
QUESTION = "Which probe was the first to fly past Uranus?"
ANSWER = f"{hostile_markup()} Voyager 2 was the first probe to fly past Uranus, in January 1986."


def write_hostile_corpus(folder: Path, base: Path | None = None) -> Path:
    """`base`'s documents (the test corpus by default) plus two hostile ones in plain text (markup stays
    literal in .txt): one whose answering sentence carries the markup, with a hostile title and a formula for
    its source, and one that carries every piece (the gateway blocks it; its panel shows it)."""
    from .conftest import TEST_CORPUS
    folder.mkdir(parents=True, exist_ok=True)
    for doc in (base or TEST_CORPUS).iterdir():
        shutil.copy(doc, folder / doc.name)
    (folder / "uranus-flyby.txt").write_text(textwrap.dedent(f"""\
        ---
        title: Uranus flyby {MARKUP[0][0]}QZSTYLED</span>
        source: {FORMULA}
        ---
        """) + ANSWER + " It returned the first close images of the planet's rings and moons.\n", encoding="utf-8")
    (folder / "uranus-rings.txt").write_text(
        hostile_text("The rings of Uranus were found in 1977. Voyager 2 flew past Uranus and imaged them. ") + "\n",
        encoding="utf-8")
    # A file name is the document's own text too: this one is skipped (not UTF-8) and listed with its reason.
    (folder / f"{MARKUP[3][0]}{MARKUP[3][1]}.txt").write_bytes(b"\xff\xfe not utf-8 \xc3\x28")
    return folder


class HostileGenerator:
    """Answers every question with the hostile answer, cites the first passage it was given, reasons in markup
    (which passes the gateway, so its tool requests are weighed), and asks twice to send an e-mail and twice to
    write its memory: once with every piece (refused or blocked, and listed), once with markup alone (which
    passes, so the outbox and the memory panel show it)."""

    def generate(self, query: str, context):
        from engine.types import Claim, Generation, ToolRequest
        cited = (context[0].id,) if context else ()
        return Generation(answer=ANSWER, reasoning=(f"I read the passages. {hostile_markup()}",),
                          claims=(Claim(ANSWER, cited),), confidence=0.99,
                          actions=(ToolRequest("send_email", {"to": FORMULA, "subject": hostile_markup(),
                                                              "body": hostile_text()}),
                                   ToolRequest("send_email", {"to": "ops@example.org", "subject": hostile_markup(),
                                                              "body": hostile_markup()}),
                                   ToolRequest("memory.write", {"key": "notes", "content": hostile_text()}),
                                   ToolRequest("memory.write", {"key": "uranus", "content": hostile_markup()})))


# What gen-hostile may ask for: its own memory, and e-mail that waits for an operator (so both reach the panels).
PERMISSIONS = """
version = 1
[tools.send_email]
allowed_domains = ["example.org"]
[agents.gen-hostile]
allowed_tools = ["memory.write", "send_email"]
memory_access = "own"
approval_mode = true
"""


def write_hostile_fleet(folder: Path, port: int, corpus: Path) -> Path:
    """The small test fleet on `corpus`, with gen-hostile at `port` and its permissions."""
    from .conftest import write_fleet
    (folder / "permissions.toml").write_text(PERMISSIONS, encoding="utf-8")
    fleet = write_fleet(folder, FLEET_ENTRY.format(port=port), corpus=corpus)
    text = fleet.read_text(encoding="utf-8")
    head, agents = text.split("[[agents]]", 1)
    fleet.write_text(f'{head}permissions = "permissions.toml"\n\n[[agents]]{agents}', encoding="utf-8")
    return fleet


FLEET_ENTRY = """
[[agents]]
id = "gen-hostile"
role = "generator"
url = "http://127.0.0.1:{port}"
"""


def start_hostile_generator(port: int):
    """The hostile generator in its own process on 127.0.0.1:port; returns the Popen once it serves."""
    import subprocess
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "tests.hostile", "--port", str(port)], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("QUORUM-READY"):
        proc.kill()
        raise RuntimeError(f"the hostile generator did not start: {line!r}")
    return proc


def _serve(port: int) -> None:
    import uvicorn

    from engine.agents.serve import bind_socket
    from engine.agents.server import build_app
    from engine.types import AgentKind, AgentSpec, Role
    spec = AgentSpec(id="gen-hostile", role=Role.GENERATOR, kind=AgentKind.QUORUM_HTTP, url=f"http://127.0.0.1:{port}")
    sock = bind_socket("127.0.0.1", port, allow_non_loopback=False)
    print(f"QUORUM-READY http://127.0.0.1:{port}", flush=True)
    uvicorn.Server(uvicorn.Config(build_app(spec, HostileGenerator(), 0), log_level="critical",
                                  lifespan="off", access_log=False)).run(sockets=[sock])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    _serve(parser.parse_args().port)
