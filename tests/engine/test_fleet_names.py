"""What a fleet file may name (issue #15): agent ids match a pattern, model names and URLs hold no control or
invisible character. Each refusal is a ConfigError naming the file and the key, with the bad value shown by
repr (so the error line itself cannot carry an escape sequence or a line break)."""
import json
from pathlib import Path

import pytest

from engine import ConfigError, load_fleet, load_settings
from engine.config import DEFAULT_FLEET, PROJECT_ROOT
from engine.types import AGENT_ID

from ..conftest import FAST_SETTINGS, write_fleet
from ..hostile import ACTING

BUILTIN = 'role = "retriever"\nbackend = "bm25"\n'
EXTERNAL = 'role = "generator"\nurl = "http://127.0.0.1:9"\n'


def toml_string(text: str) -> str:
    """`text` as a TOML basic string (JSON's escapes are TOML's, for these characters)."""
    return json.dumps(text)


def refusal(tmp_path: Path, agent: str) -> ConfigError:
    path = write_fleet(tmp_path, extra=f"[[agents]]\n{agent}")
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    error = caught.value
    assert error.file == str(path) and str(error).startswith(f"{path}: {error.key}: ")
    assert "\n" not in str(error) and not any(ch in str(error) for ch in ACTING)
    return error


@pytest.mark.parametrize("bad_id", [
    "ret web",                                  # a space
    "ret\n2026-12-02 10:00:00 INFO engine: forged",   # a line break that would forge a log line
    "<b>ret</b>",                               # markup
    "ret\x1b[31m",                              # an ANSI escape
    "ret\u202eexe",                             # a bidi override
    ".hidden",                                  # a leading dot (and ".." names the log folder's parent)
    "-rf",                                      # a leading dash reads as an option
    "r" * 65,                                   # 65 characters
    "",                                         # empty
    "ret/../../etc",                            # a path: the id names its log file
    "rét",                                      # ASCII only: a look-alike letter is another id
])
def test_an_agent_id_outside_the_pattern_is_refused(tmp_path, bad_id):
    error = refusal(tmp_path, f"id = {toml_string(bad_id)}\n{BUILTIN}")
    assert error.key == "agents[6].id"
    assert "expected 1 to 64 ASCII letters, digits" in error.reason and repr(bad_id[:80]) in error.reason


def test_ids_at_the_edges_of_the_pattern_load(tmp_path):
    ids = ("r" * 64, "0", "gen.v2_b-3", "R9")
    path = write_fleet(tmp_path, extra="".join(f'[[agents]]\nid = "{i}"\n{BUILTIN}' for i in ids))
    assert [a.id for a in load_fleet(path).agents][-4:] == list(ids)


def test_a_url_with_a_line_break_or_a_control_character_is_refused(tmp_path):
    for bad in ("http://127.0.0.1:9\n2026-12-02 10:00:00 INFO forged", "http://127.0.0.1:9/\x1b[2J",
                "http://127.0.0.1:9/\u202e", "http://127.0.0.1:9/a b", "http://127.0.0.1:9\t"):
        error = refusal(tmp_path, f'id = "gen-x"\nrole = "generator"\nurl = {toml_string(bad)}\n')
        assert error.key == "agents[6] (gen-x).url" and repr(bad) in error.reason


def test_an_otlp_endpoint_with_a_line_break_is_refused(tmp_path):
    path = tmp_path / "engine.toml"
    endpoint = toml_string("http://127.0.0.1:4318\nx")
    path.write_text(f"version = 1\n[telemetry]\notlp_endpoint = {endpoint}\n")
    with pytest.raises(ConfigError, match="telemetry.otlp_endpoint: a URL holds no spaces, line breaks"):
        load_settings(path)


@pytest.mark.parametrize("bad_model, why", [
    ("llama3.2\x1b[2J", "no line breaks, control or invisible characters"),
    ("llama3.2\nINFO forged", "no line breaks, control or invisible characters"),
    ("llama\u202e3.2", "no line breaks, control or invisible characters"),
    ("m" * 257, "at most 256 characters, found 257"),
])
def test_a_model_name_with_a_control_character_or_too_long_is_refused(tmp_path, bad_model, why):
    error = refusal(tmp_path, f'id = "gen-x"\n{EXTERNAL}model = {toml_string(bad_model)}\n')
    assert error.key == "agents[6] (gen-x).model" and why in error.reason


def test_a_model_may_be_a_gguf_path_with_spaces_or_a_served_name(tmp_path):
    for model in ("/home/me/My Models/smollm2 135m.Q8_0.gguf", "Qwen/Qwen2.5-7B-Instruct", "llama3.2:3b"):
        path = write_fleet(tmp_path, extra=f'[[agents]]\nid = "gen-x"\n{EXTERNAL}model = "{model}"\n')
        assert load_fleet(path).agent("gen-x").model == model


def test_an_unknown_key_with_a_line_break_is_named_by_repr(tmp_path):
    error = refusal(tmp_path, f'id = "x"\n{BUILTIN}"colour\\n2026-12-02 INFO forged" = 1\n')
    assert error.key == "agents[6] (x).'colour\\n2026-12-02 INFO forged'" and "unknown key" in error.reason


def test_the_shipped_fleet_files_and_the_test_fleet_load(tmp_path):
    shipped = [DEFAULT_FLEET, *sorted((PROJECT_ROOT / "bench").glob("*.toml"))]
    fleets = [load_fleet(path) for path in shipped if "[[agents]]" in path.read_text()]
    fleets.append(load_fleet(write_fleet(tmp_path)))
    assert len(fleets) >= 3
    assert all(AGENT_ID.fullmatch(a.id) for fleet in fleets for a in fleet.agents)
    load_settings(FAST_SETTINGS)


def test_a_permission_matrix_id_with_a_trailing_line_break_is_refused_by_repr(tmp_path):
    """The matrix's own id check once matched with "$", which lets a trailing line break through."""
    from engine.gateway.permissions_config import load_permissions
    path = tmp_path / "permissions.toml"
    path.write_text('version = 1\n[agents."gen-a\\n"]\nallowed_tools = []\n')
    with pytest.raises(ConfigError) as caught:
        load_permissions(path)
    assert caught.value.key == "agents.'gen-a\\n'" and "\n" not in str(caught.value)
