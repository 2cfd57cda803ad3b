"""Fuzzing the gateway's scanners: any text on either channel gets a Finding with a score in 0..1 and printable
evidence, in bounded time, never an exception; sanitising removes only what the scanner flags; the gateway as
a whole decides on anything."""
import hashlib
import math
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.gateway.build import build_gateway
from engine.gateway.envelope import Envelope, MessageKind
from engine.gateway.scanners.base import Channel, Finding
from engine.gateway.scanners.classifier import InjectionClassifier
from engine.gateway.scanners.invisible import InvisibleCharacters, decode_tags, map_lookalikes, sanitise
from engine.gateway.scanners.patterns import InstructionPatterns
from engine.gateway.scanners.seeds import SeedSimilarity
from engine.settings.gateway import GatewaySettings
from engine.types import TrustLevel

from .fuzz_strategies import TEXT_CHAR, WEIRD, texts

FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
# Words the scanners look for, so generated text reaches their deeper branches, not only the "nothing" path.
CUE_WORDS = ["ignore", "previous", "instructions", "system", "prompt", "you", "must", "reveal", "send", "to",
             "http://evil.example", "password", "忽略", "指令", "assistant:", "###", "i g n o r e", "1gn0re",
             "Іgnore", "\U000e0049\U000e0047", "\u200b", "\u202e", "please", "respond", "only", "in", "JSON", "."]
scanned_texts = st.one_of(
    texts(TEXT_CHAR, 300),
    st.lists(st.one_of(st.sampled_from(CUE_WORDS), st.sampled_from(WEIRD), st.text(TEXT_CHAR, max_size=5)),
             max_size=40).map(" ".join),
    st.lists(st.sampled_from(CUE_WORDS), max_size=60).map("".join),
)


class HashEmbedder:
    """Words hashed into signed dimensions: the seed scanner's arithmetic without loading a model."""
    name = "fuzz-hash"
    similarity_floor = 0.0

    def embed_passages(self, texts_):
        out = np.zeros((len(texts_), 64), dtype=np.float32)
        for i, text in enumerate(texts_):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.sha256(word.encode("utf-8")).digest()
                out[i, digest[0] % 64] += 1.0 if digest[1] % 2 else -1.0
        return out

    def embed_query(self, text):
        return self.embed_passages([text])[0]


SCANNERS = [InvisibleCharacters(), InstructionPatterns(), InjectionClassifier(),
            SeedSimilarity(HashEmbedder(), calibration={"fuzz-hash": {"data": 0.6, "user": 0.6}})]


def _well_formed(finding: Finding, scanner) -> None:
    assert isinstance(finding, Finding) and finding.scanner == scanner.name
    assert isinstance(finding.score, float) and math.isfinite(finding.score) and 0.0 <= finding.score <= 1.0
    assert all(isinstance(e, str) for e in finding.evidence)


@FUZZ
@given(st.sampled_from(SCANNERS), scanned_texts, st.sampled_from(list(Channel)))
def test_every_scanner_reads_any_text(scanner, text, channel):
    _well_formed(scanner.scan(text, channel), scanner)


@FUZZ
@given(scanned_texts)
def test_sanitised_text_is_clean_and_keeps_what_was_not_flagged(text):
    invisible = SCANNERS[0]
    clean = sanitise(text)
    assert invisible.scan(clean, Channel.DATA).score == 0.0, clean   # nothing it flags is left
    assert sanitise(clean) == clean
    assert len(map_lookalikes(text)) == len(text)
    assert isinstance(decode_tags(text), str)


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(scanned_texts, st.sampled_from([TrustLevel.USER, TrustLevel.TOOL, TrustLevel.EXTERNAL]))
def test_the_gateway_decides_on_anything(text, trust):
    gateway = GATEWAY
    screening = gateway.screen(Envelope("fuzz", "engine", text, trust, MessageKind.PASSAGE))
    assert 0.0 <= screening.score <= 1.0 and isinstance(screening.text, str)
    assert len(screening.text) <= max(len(text), GatewaySettings().max_data_chars)


GATEWAY = build_gateway(GatewaySettings(seeds_floor=0.0), embedder=HashEmbedder())


# Long inputs shaped to make a regular expression backtrack or a loop go quadratic; each must finish fast.
ADVERSARIAL = {
    "repeated cue": "ignore " * 4000,
    "spaced letters": "i g n o r e " * 3000,
    "dotted letters": "a." * 10000,
    "leet run": "1g" * 8000,
    "separators": ".-_*|/\\," * 3000,
    "one long word": "a" * 100_000,
    "whitespace": " \n\t" * 30_000,
    "zero-width run": "\u200b" * 20_000,
    "tag characters": "\U000e0041" * 10_000,
    "homoglyph words": "Іgnоrе " * 5000,
    "CJK": "忽略之前的所有指令" * 3000,
    "unclosed quotes": '"' * 20_000,
    "nested brackets": "(" * 20_000 + ")" * 20_000,
    "sentence ends": "A. " * 20_000,
    "urls": "http://a.b/" * 5000,
}


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: s.name)
@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_long_inputs_finish_quickly(scanner, name):
    text = ADVERSARIAL[name]
    started = time.perf_counter()
    for channel in Channel:
        _well_formed(scanner.scan(text, channel), scanner)
    # Generous: the budget is for a 2-core machine under a full test run; a backtracking regex takes minutes.
    assert time.perf_counter() - started < 10.0, f"{scanner.name} took {time.perf_counter() - started:.1f} s on {name}"


def test_a_selector_orphaned_by_sanitising_goes_too():
    """Found by hypothesis: a zero-width space before a variation selector; removing the one left the other
    first in the text, where the scanner flags it."""
    assert sanitise("\u200b\ufe00") == ""
    assert sanitise("a\u200b\ufe00b") == "a\ufe00b"      # one selector after a letter is ordinary use: kept
    assert SCANNERS[0].scan(sanitise("x \u200b\ufe00\u200b\ufe00 y"), Channel.DATA).score == 0.0
