"""Seed similarity: how close a text comes, in the engine's own embedding space, to an injection the
project already knows (resources/gateway/attack_seeds.jsonl: hand-written English and Chinese attacks,
each with its kind). It catches paraphrases of known attacks that share no wording with them.

- A text is read in pieces (features.pieces: its windows and its sentences or lines). Embedding is the
  expensive part, so only pieces with a cue of text addressed to a reader (second person, "please", a
  question, a leading verb, words about prompts, instructions or the model; Chinese likewise) are
  embedded, at most MAX_PIECES of them, those with the most cues first, in one batch.
- Each embedded piece's highest cosine to any seed is mapped to 0..1 by a logistic curve whose midpoint
  was calibrated on the dev split for this embedder (resources/gateway/seeds_calibration.json, written by
  `main.py gateway train --seeds`); the score is the highest piece's. DATA 0.5 and USER 0.6 are the
  operating points, as for the other scanners. Midpoints are kept per script (Latin, CJK): an English
  model squeezes Chinese texts together, so unrelated Chinese sentences are as close as English
  paraphrases. In the USER channel only seeds of the kinds that are
  attacks in an operator's own words count (override, jailbreak, leak, fake system text): an operator
  may ask for a poem.
- The seeds are embedded once per embedder and file, and kept in memory.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from ...text import shorten
from .. import features
from ...settings.gateway import GatewaySettings
from .base import Channel, Finding

RESOURCES = Path(__file__).resolve().parents[3] / "resources" / "gateway"
SEEDS_PATH = RESOURCES / "attack_seeds.jsonl"
CALIBRATION_PATH = RESOURCES / "seeds_calibration.json"
USER_KINDS = frozenset({"override", "jailbreak", "leak", "fake-system"})
USER_POINT = GatewaySettings.user_escalate
MAX_PIECES = 12
SLOPE = 25.0          # score 0.5 → 0.92 over a cosine rise of 0.1
# Without a calibration for an embedder: the midpoint this far from its floor (cosine of unrelated
# texts) towards 1. Conservative: only near-paraphrases of a seed reach it.
FALLBACK_POSITION = 0.85

_CUE_WORDS = re.compile(
    r"\b(?:you|your|yours|yourself|u|ur|please|pls|kindly|ignore|disregard|forget|instructions?|prompts?|"
    r"assistant|chatbot|ai|llm|gpt|chatgpt|model|reply|respond|response|answer|output|print|pretend|"
    r"roleplay|persona|jailbreak|dan|rules?|system|admin|developer|must|now)\b")
_CUE_ZH = re.compile(r"你|您|请|忽略|无视|忘记|指令|提示|系统|回答|回复|输出|扮演|假装|发送|规则|助手|模型|限制")
# a piece that opens with a verb reads as an order ("Translate ...", "Write ...")
_LEADING_VERB = re.compile(
    r"^\W*(?:write|translate|explain|describe|summari[sz]e|list|generate|create|compose|draft|tell|give|"
    r"provide|send|forward|print|output|repeat|reveal|act|add|include|insert|use|answer|respond|reply|rewrite|"
    r"make|show|analy[sz]e|develop|recommend|suggest|calculate|convert|encode|decode|spell|count|name|solve|"
    r"predict|compare|classify|rate|evaluate|teach|plan|design|invent|produce|paraphrase|interpret|"
    r"encourage|research|outline|find|search|run|execute|call|delete|remove|transfer|upload|post|share|"
    r"email|save|remember|set|change|switch|stop|start|begin|end|always|never|do|don't|from now on|what|how|"
    r"who|when|where|why|which|can|could|would|is|are)\b")


@dataclass(frozen=True)
class Seed:
    text: str
    kind: str


def load_seeds(path: Path = SEEDS_PATH) -> tuple[Seed, ...]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError(str(path), "", "the attack seed file is missing") from None
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(str(path), f"line {number}", f"not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or not row["text"].strip():
            raise ConfigError(str(path), f"line {number}", "expected an object with a non-empty 'text'")
        out.append(Seed(row["text"], str(row.get("kind", "override"))))
    if not out:
        raise ConfigError(str(path), "", "no seeds")
    return tuple(out)


def cues(piece: str) -> int:
    """How many signs of text addressed to a reader a piece carries (0: not worth embedding)."""
    low = piece.lower()
    found = len(_CUE_WORDS.findall(low)) + len(_CUE_ZH.findall(piece)) + low.count("?")
    return found + (2 if _LEADING_VERB.match(low) else 0)


def candidates(text: str, limit: int = MAX_PIECES) -> list[str]:
    """The pieces worth embedding, most cues first (ties: earlier first), at most `limit`."""
    parts = features.pieces(text) if text.strip() else []
    ranked = sorted(((cues(p), i, p) for i, p in enumerate(parts)), key=lambda t: (-t[0], t[1]))
    return [p for n, _, p in ranked if n > 0][:limit]


def load_calibration(path: Path = CALIBRATION_PATH) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), "", f"not a seed calibration file ({exc})") from None


_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def script(text: str) -> str:
    """"cjk" when at least a fifth of the text's letters are CJK characters, else "latin"."""
    letters = sum(ch.isalpha() for ch in text)
    return "cjk" if letters and len(_CJK.findall(text)) >= 0.2 * letters else "latin"


def midpoints(embedder_name: str, floor: float, calibration: dict | None = None) -> dict[str, float]:
    """The cosine at which the score is the operating point, per channel and script ("data", "user",
    "data_cjk", "user_cjk"), for this embedder."""
    found = (calibration if calibration is not None else load_calibration()).get(embedder_name)
    fallback = floor + (1.0 - floor) * FALLBACK_POSITION
    out = {"data": fallback, "user": fallback}
    if found:
        out = {"data": float(found["data"]), "user": float(found["user"])}
    for channel in ("data", "user"):
        out[f"{channel}_cjk"] = float(found.get(f"{channel}_cjk", out[channel])) if found else out[channel]
    return out


_SEED_VECTORS: dict[tuple[str, str], np.ndarray] = {}
_SEED_LOCK = threading.Lock()


def _default_embedder():
    from ...verify.embedders import MiniLMEmbedder
    return MiniLMEmbedder()


class SeedSimilarity:
    name = "seeds"

    def __init__(self, embedder=None, seeds_path: Path = SEEDS_PATH, calibration: dict | None = None) -> None:
        self.embedder = embedder if embedder is not None else _default_embedder()
        self.seeds = load_seeds(seeds_path)
        self._key = (str(getattr(self.embedder, "name", type(self.embedder).__name__)),
                     hashlib.sha256("\n".join(f"{s.kind}\t{s.text}" for s in self.seeds).encode()).hexdigest())
        self._user = np.array([s.kind in USER_KINDS for s in self.seeds])
        self.midpoints = midpoints(self._key[0], float(getattr(self.embedder, "similarity_floor", 0.0)), calibration)

    def seed_vectors(self) -> np.ndarray:
        """The seeds' unit vectors, embedded once per embedder and seed file."""
        with _SEED_LOCK:
            if self._key not in _SEED_VECTORS:
                _SEED_VECTORS[self._key] = _unit(self.embedder.embed_passages([s.text for s in self.seeds]))
            return _SEED_VECTORS[self._key]

    def nearest(self, text: str, channel: Channel) -> list[tuple[float, str, int]]:
        """(highest cosine to a seed, the piece, that seed's index) for every candidate piece."""
        parts = candidates(text)
        if not parts:
            return []
        cos = _unit(self.embedder.embed_passages(parts)) @ self.seed_vectors().T
        if channel is Channel.USER:
            cos = np.where(self._user[None, :], cos, -1.0)
        seeds = np.argmax(cos, axis=1)
        return [(float(cos[i, j]), part, int(j)) for i, (part, j) in enumerate(zip(parts, seeds))]

    def similarities(self, text: str, channel: Channel) -> tuple[float, str, int]:
        """The piece that scores highest: (its cosine, the piece, the seed's index); (0, "", -1) if none."""
        found = self.nearest(text, channel)
        if not found:
            return 0.0, "", -1
        return max(found, key=lambda f: self.score_of(f[0], channel, script(f[1])))

    def score_of(self, cosine: float, channel: Channel, written_in: str = "latin") -> float:
        key = channel.value + ("_cjk" if written_in == "cjk" else "")
        if channel is Channel.USER:
            shift = float(np.log(USER_POINT / (1 - USER_POINT)))
            return float(1 / (1 + np.exp(-(SLOPE * (cosine - self.midpoints[key]) + shift))))
        return float(1 / (1 + np.exp(-SLOPE * (cosine - self.midpoints[key]))))

    def scan(self, text: str, channel: Channel) -> Finding:
        cosine, piece, seed = self.similarities(text, channel)
        if seed < 0:
            return Finding(self.name, 0.0)
        score = self.score_of(cosine, channel, script(piece))
        flag = 0.5 if channel is Channel.DATA else USER_POINT
        evidence = ()
        if score >= flag:
            nearest = self.seeds[seed]
            evidence = (f"\"{shorten(piece, 80)}\" is close to the known {nearest.kind} attack "
                        f"\"{shorten(nearest.text, 80)}\" (cosine {cosine:.2f})",)
        return Finding(self.name, round(score, 3), evidence)


def _unit(vectors) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)
