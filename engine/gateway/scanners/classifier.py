"""A small learned injection detector: logistic regression over hashed n-grams (gateway/features.py),
scored per window so an instruction diluted in a long page still stands out. The weights ship as
resources/models/injection_classifier.npz (float16, well under 1 MB); `main.py gateway train` makes them
(README "Gateway" says on what data)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from ...text import shorten
from .. import features
from .base import Channel, Finding

MODEL_PATH = Path(__file__).resolve().parents[3] / "resources" / "models" / "injection_classifier.npz"


@dataclass(frozen=True)
class Weights:
    w: np.ndarray          # DIM weights
    b: float

    def score(self, text: str) -> float:
        idx, val = features.vector(text)
        return float(1.0 / (1.0 + np.exp(-(float(self.w[idx].astype(np.float32) @ val) + self.b))))


def load(path: Path = MODEL_PATH) -> Weights:
    try:
        with np.load(path) as data:
            w, b = data["w"], float(data["b"])
    except FileNotFoundError:
        raise ConfigError(str(path), "", "the injection classifier's weights are missing "
                                         "(make them with: python main.py gateway train)") from None
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(str(path), "", f"not a classifier weights file ({exc})") from None
    if w.shape != (features.DIM,):
        raise ConfigError(str(path), "w", f"expected {features.DIM} weights, found {w.shape}")
    return Weights(w, b)


class InjectionClassifier:
    name = "classifier"

    def __init__(self, weights: Weights | None = None) -> None:
        self.weights = weights or load()

    def scan(self, text: str, channel: Channel) -> Finding:
        best, where = 0.0, ""
        for window in features.windows(text):
            score = self.weights.score(window)
            if score > best:
                best, where = score, window
        evidence = (f"learned detector {best:.2f} on \"{shorten(where, 80)}\"",) if best >= 0.5 else ()
        return Finding(self.name, round(best, 3), evidence)
