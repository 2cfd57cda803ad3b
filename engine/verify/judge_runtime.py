"""A judge's model: asked chat messages (engine.verify.judge_prompt), it gives P(yes) of its first answer token,
or a few words of its own.

LocalJudgeModel runs the pinned Qwen 1.5B GGUF (engine.verify.judge_model) in-process with xllamacpp, a
prebuilt llama.cpp wheel from PyPI: no compiler, and llama.cpp's own server loop, which keeps the last
prompt's tokens so readings that share a prefix (one question's passages) read it once. The same words go to
any OpenAI-compatible server through engine.agents.openai_judge; both read P(yes) the same way (yes_share).
"""
from __future__ import annotations

import math
import os
import secrets
import threading
from pathlib import Path
from typing import Iterable, Protocol

from .judge_model import INSTALL_HINT, JudgeModelMissing

CONTEXT_TOKENS = 4096
TOP_TOKENS = 20               # top log-probabilities asked for the first token
YES = frozenset({"yes"})
NO = frozenset({"no"})


class JudgeModel(Protocol):
    """What a judge needs of a language model."""

    def p_yes(self, messages: list[dict]) -> float | None: ...

    def generate(self, messages: list[dict], max_tokens: int) -> str: ...


class JudgeModelFailed(RuntimeError):
    """The model gave no usable reply; the message says what came back."""


def yes_share(top: Iterable[tuple[str, float]]) -> float | None:
    """P(yes) among the first token's top log-probabilities: every spelling of Yes ("Yes", " Yes", "YES")
    against every spelling of No, each side summed. None when neither is among them (no reading)."""
    yes = no = 0.0
    for token, logprob in top:
        word = token.strip().lower()
        if word in YES:
            yes += math.exp(logprob)
        elif word in NO:
            no += math.exp(logprob)
    return None if yes + no == 0.0 else yes / (yes + no)


def top_logprobs(reply: dict) -> list[tuple[str, float]]:
    """(token, logprob) of the first generated token of an OpenAI-style chat completion; [] if absent."""
    try:
        first = reply["choices"][0]["logprobs"]["content"][0]
        return [(str(t["token"]), float(t["logprob"])) for t in first["top_logprobs"]]
    except (KeyError, IndexError, TypeError, ValueError):
        return []


def reply_text(reply: dict) -> str:
    try:
        return str(reply["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError):
        raise JudgeModelFailed(f"no message in the model's reply: {str(reply)[:200]}") from None


class LocalJudgeModel:
    """The GGUF at `path` in an in-process llama.cpp server (xllamacpp). Thread-safe: requests queue in its
    loop. llama.cpp's server also listens on a loopback port; it is given a random API key that nobody holds,
    so nothing but this object can ask it."""

    def __init__(self, path: Path, threads: int | None = None, context_tokens: int = CONTEXT_TOKENS) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # idle threads must not spin on a shared CPU
        try:
            import xllamacpp
        except ImportError:
            raise JudgeModelMissing(f"xllamacpp is not installed: {INSTALL_HINT}") from None
        threads = threads or min(os.cpu_count() or 1, 8)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = context_tokens
        params.n_parallel = 1          # one slot: its cache holds the prefix the next reading shares
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.api_keys = [secrets.token_hex(32)]
        params.verbosity = -1          # llama.cpp's own log lines would flood the agent's log
        self._server = xllamacpp.Server(params)
        self._lock = threading.Lock()

    def _complete(self, request: dict) -> dict:
        with self._lock:
            reply = self._server.handle_chat_completions({"temperature": 0.0, "cache_prompt": True, **request})
        if not isinstance(reply, dict) or "error" in reply:
            raise JudgeModelFailed(f"the model answered an error: {str(reply)[:200]}")
        return reply

    def p_yes(self, messages: list[dict]) -> float | None:
        reply = self._complete({"messages": messages, "max_tokens": 1, "logprobs": True, "top_logprobs": TOP_TOKENS})
        return yes_share(top_logprobs(reply))

    def generate(self, messages: list[dict], max_tokens: int) -> str:
        return reply_text(self._complete({"messages": messages, "max_tokens": max_tokens})).strip()
