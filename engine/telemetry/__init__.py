"""Traces out: each question as an OpenTelemetry trace (its stages, its agent calls) to an OTLP collector.

Off by default ([telemetry] in config/engine.toml). While it is off nothing of OpenTelemetry is imported:
`start_telemetry` loads it only for an engine that has it on.

    question (quorum.question, the trace id = the Quorum trace id)
    ├── quorum.stage.formulate / retrieve / reason / tool / synthesize   one per attempt, in order
    │   └── quorum.agent.retriever / generator / verifier                one per agent call, ended in that stage
    └── ...
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Mapping

from ..errors import ConfigError
from ..settings.telemetry import TelemetrySettings, check_telemetry

if TYPE_CHECKING:
    from .traces import QuestionTraces

__all__ = ["TelemetrySettings", "check_telemetry", "start_telemetry"]


def start_telemetry(settings: TelemetrySettings, *, environ: Mapping[str, str] | None = None,
                    clock: Callable[[], float] = time.time) -> "QuestionTraces | None":
    """The listener that exports every question to settings.otlp_endpoint, or None when telemetry is off.
    Starts the exporter's thread; a missing headers variable is a ConfigError."""
    if not settings.enabled:
        return None
    try:
        from .export import otlp_processor          # OpenTelemetry is imported here, and only here
        from .traces import QuestionTraces
    except ImportError as missing:
        raise ConfigError("[telemetry]", "enabled", f"traces out need OpenTelemetry ({missing.name} is not "
                                                    "installed): pip install opentelemetry-sdk "
                                                    "opentelemetry-exporter-otlp-proto-http") from None
    return QuestionTraces(settings, otlp_processor(settings, environ), clock=clock)
