"""A small learned injection detector: logistic regression over hashed n-grams (gateway/features.py),
scored per piece (overlapping windows and single sentences), so an instruction diluted in a long page
still stands out. Two heads: DATA (anything an agent, document or tool supplies) and USER (the
operator's own words, where an ordinary request is not an attack). The weights ship as
resources/models/injection_classifier.npz (float16, well under 1 MB); `main.py gateway train` makes
them (bench/train/gateway.py says on what data).

Calibrated in training: a DATA score of 0.5 is the data operating point (GatewaySettings.data_block) and
a USER score of USER_POINT the user one (user_escalate)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from ...text import shorten
from .. import features
from ...settings.gateway import GatewaySettings
from .base import Channel, Finding

MODEL_PATH = Path(__file__).resolve().parents[3] / "resources" / "models" / "injection_classifier.npz"
USER_POINT = GatewaySettings.user_escalate


@dataclass(frozen=True)
class Weights:
    w: np.ndarray                   # DIM weights, DATA head
    b: float
    w_user: np.ndarray | None = None   # USER head (the DATA head when absent)
    b_user: float = 0.0

    def head(self, channel: Channel) -> tuple[np.ndarray, float]:
        if channel is Channel.USER and self.w_user is not None:
            return self.w_user, self.b_user
        return self.w, self.b

    def logits(self, parts: list[str], channel: Channel = Channel.DATA) -> np.ndarray:
        w, b = self.head(channel)
        out = np.empty(len(parts), dtype=np.float64)
        for i, part in enumerate(parts):
            idx, val = features.vector(part)
            out[i] = float(w[idx].astype(np.float32) @ val) + b
        return out

    def score(self, text: str, channel: Channel = Channel.DATA) -> float:
        return float(1.0 / (1.0 + np.exp(-self.logits([text], channel)[0])))


def load(path: Path = MODEL_PATH) -> Weights:
    try:
        with np.load(path) as data:
            w, b = data["w"], float(data["b"])
            w_user = data["w_user"] if "w_user" in data.files else None
            b_user = float(data["b_user"]) if "b_user" in data.files else 0.0
    except FileNotFoundError:
        raise ConfigError(str(path), "", "the injection classifier's weights are missing "
                                         "(make them with: python main.py gateway train)") from None
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(str(path), "", f"not a classifier weights file ({exc})") from None
    for name, found in (("w", w), ("w_user", w_user)):
        if found is not None and found.shape != (features.DIM,):
            raise ConfigError(str(path), name, f"expected {features.DIM} weights, found {found.shape}")
    return Weights(w, b, w_user, b_user)


class InjectionClassifier:
    name = "classifier"

    def __init__(self, weights: Weights | None = None) -> None:
        self.weights = weights or load()

    def scan(self, text: str, channel: Channel) -> Finding:
        if not text.strip():
            return Finding(self.name, 0.0)
        parts = features.pieces(text)
        z = self.weights.logits(parts, channel)
        at = int(np.argmax(z))
        best = float(1.0 / (1.0 + np.exp(-z[at])))
        flag = 0.5 if channel is Channel.DATA else USER_POINT
        evidence = (f"learned detector {best:.2f} on \"{shorten(parts[at], 80)}\"",) if best >= flag else ()
        return Finding(self.name, round(best, 3), evidence)
