"""Adapter for an OpenAI-compatible chat server (the OpenAI API, vLLM, llama.cpp, llama-cpp-python, Ollama) as a
generator.

The prompt and the reply's JSON Schema come from engine.agents.llm_reply. Servers take that schema in different
dialects (types.ChatDialect): the fleet file names one, or `auto` asks the server's /v1/models who it is. A server
that refuses the schema (HTTP 400, 404, 415 or 422) is asked again with plain json_object, and that fallback
sticks for the agent; whichever dialect a reply came in is recorded with the call's outcome. Every reply is
checked against the protocol: a model constrained by a grammar can still cite the wrong passage, and one that
was not can write anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import AgentProtocolError
from ..types import ChatDialect, Chunk, Generation
from .llm_reply import MAX_REPLY_TOKENS, messages, parse_content, reply_schema

CHAT_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"
MODELS_PATH = "/v1/models"
REFUSED_FORM = (400, 404, 415, 422)   # the server does not take this request's form (its schema dialect, its path)

# /v1/models' owned_by names the server where the OpenAI API leaves it open.
_OWNERS = {"me": ChatDialect.JSON_OBJECT_SCHEMA,       # llama-cpp-python's server
           "library": ChatDialect.OLLAMA,              # Ollama (its library models)
           "ollama": ChatDialect.OLLAMA}


@dataclass(frozen=True)
class ChatRequest:
    path: str                      # below the agent's url
    body: dict[str, Any]
    dialect: ChatDialect


def build_chat_request(model: str, question: str, context: Sequence[Chunk], memory: Sequence[Chunk] = (),
                       dialect: ChatDialect = ChatDialect.JSON_SCHEMA) -> ChatRequest:
    chat = [{"role": m.role, "content": m.content} for m in messages(question, context, memory)]
    schema = reply_schema([c.id for c in (*context, *memory)])
    if dialect is ChatDialect.OLLAMA:
        return ChatRequest(OLLAMA_PATH, {"model": model, "messages": chat, "stream": False, "format": schema,
                                         "options": {"temperature": 0, "num_predict": MAX_REPLY_TOKENS}}, dialect)
    formats = {
        ChatDialect.JSON_SCHEMA: {"type": "json_schema",
                                  "json_schema": {"name": "GenerateReply", "strict": True, "schema": schema}},
        ChatDialect.JSON_OBJECT_SCHEMA: {"type": "json_object", "schema": schema},
        ChatDialect.JSON_OBJECT: {"type": "json_object"},
    }
    if dialect not in formats:
        raise ValueError(f"no request form for dialect {dialect.value!r} (auto is resolved before a request)")
    return ChatRequest(CHAT_PATH, {"model": model, "messages": chat, "temperature": 0,
                                   "max_tokens": MAX_REPLY_TOKENS, "response_format": formats[dialect]}, dialect)


def reply_content(agent_id: str, data: Any, dialect: ChatDialect) -> Any:
    """The model's text in a server's reply: choices[0].message.content (Ollama: message.content)."""
    try:
        if dialect is ChatDialect.OLLAMA:
            return data["message"]["content"]
        return data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        where = "message.content" if dialect is ChatDialect.OLLAMA else "choices[0].message.content"
        raise AgentProtocolError(agent_id, f"reply has no {where}") from None


def parse_chat_reply(agent_id: str, data: Any, dialect: ChatDialect = ChatDialect.JSON_SCHEMA) -> Generation:
    return parse_content(agent_id, reply_content(agent_id, data, dialect))


def dialect_from_models(data: Any) -> ChatDialect:
    """What /v1/models says of the server: its first model's owned_by, when it names one we know."""
    try:
        owner = str(data["data"][0].get("owned_by", "")).lower()
    except (KeyError, IndexError, TypeError, AttributeError):
        return ChatDialect.JSON_SCHEMA
    return _OWNERS.get(owner, ChatDialect.JSON_SCHEMA)
