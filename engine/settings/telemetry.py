"""[telemetry] in config/engine.toml: whether questions leave as OpenTelemetry traces, and where to.

Only names and numbers live here: a collector's API key comes from the environment variable that
headers_env names, read when the engine starts, so the settings file (shared, committed) never holds it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ConfigError
from ..urls import check_url, is_loopback

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class TelemetrySettings:
    enabled: bool = False
    otlp_endpoint: str = "http://127.0.0.1:4318/v1/traces"   # OTLP/HTTP (protobuf), the signal path included
    service_name: str = "quorum"
    headers_env: str = ""             # a variable holding "key=value,key2=value2" (an API key); "" = no headers
    export_timeout_s: float = 5.0     # one export attempt's budget; a collector that is down costs no more
    question_timeout_s: float = 300.0  # a question whose events stop this long is sent as abandoned


def check_telemetry(file: str, settings: TelemetrySettings) -> TelemetrySettings:
    """ConfigError naming the file and the key; the endpoint as given (a collector's path matters)."""
    endpoint = check_url(file, "telemetry.otlp_endpoint", settings.otlp_endpoint)
    if endpoint.username or endpoint.password:      # it would be logged with the endpoint
        raise ConfigError(file, "telemetry.otlp_endpoint", "no credentials in the URL: name the variable holding "
                                                          "the collector's headers with headers_env")
    if not settings.service_name.strip():
        raise ConfigError(file, "telemetry.service_name", "must not be empty")
    if settings.headers_env:
        if not _ENV_NAME.match(settings.headers_env):
            raise ConfigError(file, "telemetry.headers_env",
                              f"expected an environment variable name, found {settings.headers_env!r}")
        if endpoint.scheme == "http" and not is_loopback(endpoint.hostname):
            raise ConfigError(file, "telemetry.headers_env", "the headers (an API key) would cross the network in "
                                                             "clear text: give otlp_endpoint an https URL")
    for key in ("export_timeout_s", "question_timeout_s"):
        if getattr(settings, key) <= 0:
            raise ConfigError(file, f"telemetry.{key}", f"must be positive, found {getattr(settings, key)}")
    return settings

