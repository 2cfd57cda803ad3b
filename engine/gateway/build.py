"""Scanners by the names config uses, built once per engine."""
from __future__ import annotations

from typing import Callable

from ..errors import ConfigError
from .gateway import Gateway
from .scanners.base import Scanner
from ..settings.gateway import KNOWN_SCANNERS, GatewaySettings


def _invisible(embedder) -> Scanner:
    from .scanners.invisible import InvisibleCharacters
    return InvisibleCharacters()


def _patterns(embedder) -> Scanner:
    from .scanners.patterns import InstructionPatterns
    return InstructionPatterns()


def _seeds(embedder) -> Scanner:
    from .scanners.seeds import SeedSimilarity
    return SeedSimilarity(embedder)


def _classifier(embedder) -> Scanner:
    from .scanners.classifier import InjectionClassifier
    return InjectionClassifier()


def _encoder(embedder) -> Scanner:
    from .scanners.encoder import EncoderModel, InjectionEncoder
    # loaded now: a missing or altered artifact fails the engine's start, not its first question
    return InjectionEncoder(EncoderModel())


FACTORIES: dict[str, Callable[[object], Scanner]] = {
    "invisible": _invisible, "patterns": _patterns, "seeds": _seeds, "classifier": _classifier, "encoder": _encoder}
assert set(FACTORIES) == set(KNOWN_SCANNERS)


def build_gateway(settings: GatewaySettings, embedder=None, where: str = "gateway.scanners") -> Gateway:
    """embedder: the engine's own (retrieval.embedder), for the seed-similarity scanner."""
    scanners = []
    for name in settings.scanners:
        if name not in FACTORIES:
            raise ConfigError("engine settings", where, f"unknown scanner {name!r}; expected {', '.join(FACTORIES)}")
        scanners.append(FACTORIES[name](embedder))
    return Gateway(settings, scanners)
