"""Where agents listen and how they are reached: loopback unless the fleet file says otherwise twice,
plain http only to loopback unless allowed, keys only by reference, TLS settings that fit together."""
import subprocess
import sys
import textwrap

import pytest

from engine import load_fleet
from engine.agents.launcher import agent_url
from engine.agents.serve import bind_socket
from engine.config import PROJECT_ROOT, is_loopback
from engine.errors import ConfigError
from engine.types import AgentKind, AgentSecurity, AgentSpec, Role

from ..conftest import FAST_SETTINGS, TEST_CORPUS

GENERATOR = """
[[agents]]
id = "gen"
role = "generator"
backend = "extractive"
"""


def fleet_file(tmp_path, agent: str, top: str = "", extra: str = GENERATOR):
    path = tmp_path / "fleet.toml"
    path.write_text(f'version = 1\ncorpus = "{TEST_CORPUS.as_posix()}"\n{top}\n[[agents]]\nid = "ret"\n'
                    f'role = "retriever"\n{textwrap.dedent(agent)}\n{extra}')
    return path


def refused(tmp_path, agent: str, top: str = "", extra: str = GENERATOR) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_fleet(fleet_file(tmp_path, agent, top, extra))
    assert caught.value.file.endswith("fleet.toml")
    return caught.value


# --- binding ---------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "agents.example.org"])
def test_a_built_in_agent_on_another_interface_needs_allow_non_loopback(tmp_path, host):
    error = refused(tmp_path, f'backend = "bm25"\nhost = "{host}"')
    assert error.key == "agents[0] (ret).host" and "allow_non_loopback" in error.reason
    fleet = load_fleet(fleet_file(tmp_path, f'backend = "bm25"\nhost = "{host}"', top="allow_non_loopback = true"))
    assert fleet.allow_non_loopback and fleet.agent("ret").security.host == host


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_need_nothing(tmp_path, host):
    fleet = load_fleet(fleet_file(tmp_path, f'backend = "bm25"\nhost = "{host}"'))
    assert not fleet.allow_non_loopback and fleet.agent("ret").security.host == host


def test_the_default_is_loopback(tmp_path):
    fleet = load_fleet(fleet_file(tmp_path, 'backend = "bm25"'))
    assert fleet.agent("ret").security.host == "127.0.0.1" and is_loopback("127.0.0.1")
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "localhost.evil.example"))


def test_allow_non_loopback_must_be_a_boolean(tmp_path):
    error = refused(tmp_path, 'backend = "bm25"', top='allow_non_loopback = "yes"')
    assert error.key == "allow_non_loopback"


def test_the_agent_process_refuses_to_bind_another_interface_unless_allowed():
    with pytest.raises(OSError, match="allow_non_loopback"):
        bind_socket("0.0.0.0", 0, allow_non_loopback=False)
    sock = bind_socket("127.0.0.1", 0, allow_non_loopback=False)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


def test_the_agent_process_exits_naming_the_key_when_the_fleet_exposes_it(tmp_path):
    path = fleet_file(tmp_path, 'backend = "bm25"\nhost = "0.0.0.0"')
    run = subprocess.run([sys.executable, "-m", "engine.agents.serve", "--fleet", str(path), "--agent", "ret",
                          "--cache-dir", str(tmp_path / "cache")], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and "agents[0] (ret).host" in run.stderr and "QUORUM-READY" not in run.stdout


def _spec(**security) -> AgentSpec:
    return AgentSpec(id="b", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, backend="bm25",
                     security=AgentSecurity(**security))


def test_the_engine_reaches_a_wildcard_bind_on_loopback_and_tls_on_https():
    assert agent_url(_spec(), 4000) == "http://127.0.0.1:4000"
    assert agent_url(_spec(host="0.0.0.0"), 4000) == "http://127.0.0.1:4000"
    assert agent_url(_spec(host="::"), 4000) == "http://[::1]:4000"
    assert agent_url(_spec(host="10.1.2.3", tls_cert="c", tls_key="k"), 4000) == "https://10.1.2.3:4000"


# --- external agents -------------------------------------------------------------------------
def test_plain_http_to_another_host_is_refused_unless_allowed(tmp_path):
    error = refused(tmp_path, 'url = "http://10.0.0.5:8000"')
    assert error.key == "agents[0] (ret).url" and "https" in error.reason
    assert load_fleet(fleet_file(tmp_path, 'url = "https://10.0.0.5:8000"')).agent("ret").url.startswith("https")
    allowed = load_fleet(fleet_file(tmp_path, 'url = "http://10.0.0.5:8000"\nallow_http = true'))
    assert allowed.agent("ret").security.allow_http
    assert load_fleet(fleet_file(tmp_path, 'url = "http://127.0.0.1:8000"')).agent("ret").url


@pytest.mark.parametrize("agent, key", [
    ('url = "https://a"\nhost = "127.0.0.1"', "host"),             # an external agent's address is its url
    ('backend = "bm25"\nallow_http = true', "allow_http"),
    ('url = "https://a"\ntls_cert = "fleet.toml"', "tls_cert"),
])
def test_settings_for_the_other_kind_of_agent_are_refused(tmp_path, agent, key):
    assert refused(tmp_path, agent).key == f"agents[0] (ret).{key}"


# --- keys by reference only ------------------------------------------------------------------
def test_a_key_written_into_the_fleet_file_is_refused_without_repeating_it(tmp_path):
    secret = "ab" * 32
    error = refused(tmp_path, f'url = "https://a"\nkey = "{secret}"')
    assert error.key == "agents[0] (ret).key" and "key_env" in error.reason and secret not in str(error)


def test_key_sources(tmp_path):
    key_file = tmp_path / "ret.key"
    key_file.write_text("00" * 32)
    fleet = load_fleet(fleet_file(tmp_path, f'url = "https://a"\nkey_file = "{key_file.name}"'))
    assert fleet.agent("ret").security.key_file == str(key_file.resolve())
    fleet = load_fleet(fleet_file(tmp_path, 'backend = "bm25"\nkey_env = "QUORUM_KEY_RET"'))
    assert fleet.agent("ret").security.key_env == "QUORUM_KEY_RET" and fleet.agent("ret").security.keyed
    assert refused(tmp_path, 'url = "https://a"\nkey_env = "A"\nkey_file = "x"').key == "agents[0] (ret).key_file"
    assert refused(tmp_path, 'url = "https://a"\nkey_env = "not a name"').key == "agents[0] (ret).key_env"
    assert refused(tmp_path, 'url = "https://a"\nkey_file = "missing.key"').key == "agents[0] (ret).key_file"


def test_an_openai_chat_endpoint_cannot_be_keyed(tmp_path):
    chat = """
        [[agents]]
        id = "llm"
        role = "generator"
        kind = "openai-chat"
        url = "http://127.0.0.1:11434"
        model = "m"
        key_env = "QUORUM_KEY_LLM"
        """
    error = refused(tmp_path, 'backend = "bm25"', extra=textwrap.dedent(chat))
    assert error.key == "agents[1] (llm).key_env" and "ca_file" in error.reason


# --- TLS settings ----------------------------------------------------------------------------
def test_tls_files_must_exist_and_fit_the_scheme(tmp_path):
    pem = tmp_path / "x.pem"
    pem.write_text("not checked here")
    assert refused(tmp_path, 'url = "https://a"\nca_file = "none.pem"').key == "agents[0] (ret).ca_file"
    assert refused(tmp_path, 'url = "http://127.0.0.1:1"\nca_file = "x.pem"').key == "agents[0] (ret).ca_file"
    assert refused(tmp_path, 'backend = "bm25"\nca_file = "x.pem"').key == "agents[0] (ret).ca_file"
    assert refused(tmp_path, 'backend = "bm25"\ntls_cert = "x.pem"').key == "agents[0] (ret).tls_key"
    assert refused(tmp_path, 'url = "https://a"\nclient_key = "x.pem"').key == "agents[0] (ret).client_cert"
    fleet = load_fleet(fleet_file(tmp_path, 'backend = "bm25"\ntls_cert = "x.pem"\ntls_key = "x.pem"\n'
                                            'ca_file = "x.pem"'))
    assert fleet.agent("ret").security.tls_cert == str(pem.resolve())
    fleet = load_fleet(fleet_file(tmp_path, 'url = "https://a"\nca_file = "x.pem"\nclient_cert = "x.pem"'))
    assert fleet.agent("ret").security.client_cert == str(pem.resolve())


def test_the_shipped_fleet_binds_loopback_only():
    fleet = load_fleet()
    assert not fleet.allow_non_loopback
    assert all(is_loopback(a.security.host) for a in fleet.agents if a.builtin)


async def test_a_missing_key_stops_the_engine_before_it_opens_anything(tmp_path, db_path, cache_dir, monkeypatch):
    from engine import Engine, load_settings
    monkeypatch.delenv("QUORUM_TEST_MISSING_KEY", raising=False)
    fleet = load_fleet(fleet_file(tmp_path, 'backend = "bm25"\nkey_env = "QUORUM_TEST_MISSING_KEY"'))
    engine = Engine(fleet, load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir)
    with pytest.raises(ConfigError) as caught:
        await engine.start()
    assert caught.value.key == "agents[0] (ret).key_env" and "QUORUM_TEST_MISSING_KEY is not set" in caught.value.reason
    assert not db_path.exists() and not (cache_dir / "logs").exists()
