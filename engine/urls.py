"""URLs and hosts from settings files: one check for every URL a file gives (agents, the OTLP collector)
and one answer to "is this host loopback?"."""
from __future__ import annotations

import ipaddress
from urllib.parse import ParseResult, urlparse

from .errors import ConfigError


def check_url(file: str, key: str, url: str) -> ParseResult:
    """An http(s) URL with a host and a valid port, parsed; else a ConfigError naming the file and the key.
    No whitespace or control character anywhere: urlparse drops a tab or line break without a word, and the URL
    is shown to operators and written in logs."""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise ConfigError(file, key, f"a URL holds no spaces, line breaks, control or invisible characters, "
                                     f"found {url!r}")
    try:
        parsed = urlparse(url)
    except ValueError as exc:     # "http://[::1": an unclosed IPv6 bracket
        raise ConfigError(file, key, f"not a URL ({exc}): {url!r}") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(file, key, f"expected an http(s) URL with a host, found {url!r}")
    try:
        parsed.port
    except ValueError:
        raise ConfigError(file, key, f"bad port in URL {url!r}") from None
    return parsed


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost; a name is never resolved (what it resolves to may change)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
