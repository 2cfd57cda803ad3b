"""TLS to agents: the client verifies https (the agent's own CA bundle, or the system's), presents a client
certificate for mTLS, and a certificate that does not verify is that agent's outcome, never a crash. The
certificates are made in the test with the machine's openssl."""
import shutil
import ssl
import subprocess
import textwrap
from pathlib import Path

import pytest

from engine import CallStatus, load_fleet
from engine.agents.auth import AgentAuthError, Keyring
from engine.agents.client import AgentClient, outcome
from engine.agents.launcher import FleetLauncher
from engine.agents.retrievers import BM25Retriever
from engine.agents.server import build_app
from engine.config import LimitSettings
from engine.ingest.corpus import load_corpus
from engine.types import AgentKind, AgentSecurity, AgentSpec, Role

from ..conftest import TEST_CORPUS
from ..serving import serving

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="no openssl on this machine to make test certificates with "
                                       "(and the cryptography package is not installed)")
CORPUS = load_corpus(TEST_CORPUS)
KEY = bytes(range(32))


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(folder: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-days", "2", "-subj", f"/CN=Quorum test {name}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)


def _leaf(folder: Path, name: str, ca: str, usage: str) -> None:
    (folder / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                        f"extendedKeyUsage={usage}\nauthorityKeyIdentifier=keyid,issuer\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", "/CN=127.0.0.1", cwd=folder)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=folder)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    _ca(folder, "ca")
    _ca(folder, "other-ca")
    _leaf(folder, "server", "ca", "serverAuth")
    _leaf(folder, "engine", "ca", "clientAuth")
    return folder


async def _serving(app, pki: Path, client_ca: str = ""):
    """A keyed retriever on https://127.0.0.1:<port> in this process; returns (url, stop)."""
    extra = {"ssl_ca_certs": str(pki / f"{client_ca}.pem"), "ssl_cert_reqs": ssl.CERT_REQUIRED} if client_ca else {}
    return await serving(app, scheme="https", ssl_certfile=str(pki / "server.pem"),
                         ssl_keyfile=str(pki / "server.key"), **extra)


def _spec(url: str, **security) -> AgentSpec:
    return AgentSpec(id="r1", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, url=url, timeout_s=10,
                     security=AgentSecurity(**security))


def _client() -> AgentClient:
    ring = Keyring()
    ring._keys["r1"] = KEY
    return AgentClient(LimitSettings(), keyring=ring)


def _app():
    spec = AgentSpec(id="r1", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, backend="bm25")
    return build_app(spec, BM25Retriever(CORPUS), len(CORPUS.chunks), key=KEY)


async def test_an_https_agent_with_the_right_ca_works_and_with_a_wrong_one_is_an_outcome(pki):
    url, stop = await _serving(_app(), pki)
    client = _client()
    try:
        good = _spec(url, ca_file=str(pki / "ca.pem"))
        chunks = await client.retrieve(good, url, "moons of Mars", 3, "t-1")
        assert any("Phobos" in c.text for c in chunks)
        assert (await client.health(good, url))["status"] == "ok"
        for wrong in (_spec(url, ca_file=str(pki / "other-ca.pem")), _spec(url)):   # another CA; the system's
            result = await outcome(wrong, client.retrieve(wrong, url, "moons of Mars", 3, "t-2"))
            assert result.value is None and result.outcome.status is CallStatus.MALFORMED
            assert "certificate verify failed" in result.outcome.error
            with pytest.raises(AgentAuthError, match="certificate verify failed"):
                await client.health(wrong, url)
    finally:
        await client.aclose()
        await stop()


async def test_mutual_tls_needs_the_engines_client_certificate(pki):
    url, stop = await _serving(_app(), pki, client_ca="ca")
    client = _client()
    try:
        with_cert = _spec(url, ca_file=str(pki / "ca.pem"), client_cert=str(pki / "engine.pem"),
                          client_key=str(pki / "engine.key"))
        assert await client.retrieve(with_cert, url, "moons of Mars", 3, "t")
        without = _spec(url, ca_file=str(pki / "ca.pem"))
        result = await outcome(without, client.retrieve(without, url, "moons of Mars", 3, "t"))
        assert result.value is None and result.outcome.status is not CallStatus.OK and result.outcome.error
    finally:
        await client.aclose()
        await stop()


async def test_unreadable_tls_files_are_the_agents_outcome(pki, tmp_path):
    broken = tmp_path / "broken.pem"
    broken.write_text("not a certificate")
    spec = _spec("https://127.0.0.1:9", ca_file=str(broken))
    client = _client()
    result = await outcome(spec, client.retrieve(spec, spec.url, "q", 3, "t"))
    await client.aclose()
    assert result.outcome.status is CallStatus.MALFORMED and "TLS files" in result.outcome.error


async def test_a_launched_built_in_agent_serves_https_with_its_key(pki, tmp_path):
    fleet_path = tmp_path / "fleet.toml"
    fleet_path.write_text(textwrap.dedent(f"""
        version = 1
        corpus = "{TEST_CORPUS.as_posix()}"

        [[agents]]
        id = "ret-tls"
        role = "retriever"
        backend = "bm25"
        tls_cert = "{pki / 'server.pem'}"
        tls_key = "{pki / 'server.key'}"
        ca_file = "{pki / 'ca.pem'}"

        [[agents]]
        id = "gen-ext"
        role = "generator"
        url = "http://127.0.0.1:9"
        """))
    fleet = load_fleet(fleet_path)
    ring = Keyring()
    launcher = FleetLauncher(fleet, tmp_path / "cache", keyring=ring, ready_timeout_s=60)
    client = AgentClient(LimitSettings(), keyring=ring)
    try:
        urls = await launcher.start()
        assert urls["ret-tls"].startswith("https://127.0.0.1:") and "ret-tls" in ring
        spec = fleet.agent("ret-tls")
        chunks = await client.retrieve(spec, urls["ret-tls"], "moons of Mars", 3, "t")
        assert any("Phobos" in c.text for c in chunks)
        # Without the run's key the agent gives nothing away, even over good TLS.
        stranger = AgentClient(LimitSettings())
        try:
            result = await outcome(spec, stranger.retrieve(spec, urls["ret-tls"], "moons of Mars", 3, "t"))
        finally:
            await stranger.aclose()
        assert result.value is None and "HTTP 401" in result.outcome.error
    finally:
        await client.aclose()
        await launcher.stop()
