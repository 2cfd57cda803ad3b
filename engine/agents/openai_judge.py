"""A judge on any OpenAI-compatible server (llama.cpp's server, vLLM, Ollama, the OpenAI API): a verifier of kind
`openai-chat` is asked the judges' own prompts (engine.verify.judge_prompt) as chat completions, and P(yes)
is read from the top log-probabilities of its first token (engine.verify.judge_runtime.yes_share), as the
built-in judge reads its own. Candidates are asked one after another, so a server that caches prompt prefixes
reads the shared passages once.

A server that gives no log-probabilities (some do not) cannot be read this way: its reply is a failed call,
with the reason said, never a guess from the text.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Sequence

from ..errors import AgentProtocolError
from ..types import AgentSpec, Chunk
from ..verify import judge_prompt
from ..verify.judge import OWN_ANSWER_TOKENS, claim_prompt, judgement_from
from ..verify.judge_runtime import TOP_TOKENS, top_logprobs, yes_share
from .schema import ReadReply, ScreenReply

CHAT_PATH = "/v1/chat/completions"
Post = Callable[[str, dict], Awaitable[Any]]


def _p_yes(spec: AgentSpec, data: Any) -> float:
    p = yes_share(top_logprobs(data))
    if p is None:
        raise AgentProtocolError(spec.id, "its reply has no log-probabilities of Yes or No for the first token "
                                          "(does the server give logprobs?)")
    return round(p, 4)


def _reading_body(spec: AgentSpec, messages: list[dict]) -> dict:
    return {"model": spec.model, "messages": messages, "temperature": 0, "max_tokens": 1, "logprobs": True,
            "top_logprobs": TOP_TOKENS}


async def chat_read(post: Post, spec: AgentSpec, question: str, passages: Sequence[Chunk],
                    candidates: Sequence[str], own_answer: bool) -> ReadReply:
    scores = []
    for candidate in candidates:
        scores.append(_p_yes(spec, await post(CHAT_PATH, _reading_body(
            spec, judge_prompt.reading(question, passages, candidate)))))
    answer = ""
    if own_answer:
        data = await post(CHAT_PATH, {"model": spec.model, "messages": judge_prompt.own_answer(question, passages),
                                      "temperature": 0, "max_tokens": OWN_ANSWER_TOKENS})
        try:
            answer = str(data["choices"][0]["message"]["content"] or "").strip()
        except (KeyError, IndexError, TypeError):
            raise AgentProtocolError(spec.id, "reply has no choices[0].message.content") from None
    return ReadReply(tuple(scores), answer, f"read by {spec.model or spec.id}")


async def chat_screen(post: Post, spec: AgentSpec, texts: Sequence[str]) -> ScreenReply:
    """P(yes) that each flagged passage holds an instruction aimed at the assistant, one reading each."""
    scores = [_p_yes(spec, await post(CHAT_PATH, _reading_body(spec, judge_prompt.instructs(t)))) for t in texts]
    return ScreenReply(tuple(scores), f"read by {spec.model or spec.id}")


async def chat_validate(post: Post, spec: AgentSpec, claim: str, evidence: Sequence[Chunk]) -> tuple:
    """(label, score, reason), as client.validate gives a quorum-http verifier's judgement."""
    prompt = claim_prompt(claim, evidence, spec.id)
    made = prompt if not isinstance(prompt, list) else judgement_from(
        _p_yes(spec, await post(CHAT_PATH, _reading_body(spec, prompt))), spec.id)
    return made.label, made.score, made.reason
