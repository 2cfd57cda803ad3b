"""The LLM judge: Qwen2.5-Coder-1.5B asked whether a claim's aligned evidence supports it, P(yes) read from the
Yes and No logits of its first answer token. It runs as a verifier agent (backend `llm-judge`, off in
config/fleet.toml): at 2-3 s a pair on two cores it is for the high tier and for disputes, never the fast path.

The claim and the evidence are untrusted: they are tokenized as plain text (a "<|im_end|>" inside them is
letters, not the end of the turn), and only the two logits are read, so nothing they say can make the judge
write anything else.
"""
from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Protocol, Sequence

from ..text import aligned_evidence
from ..types import Chunk, ClaimLabel
from .judge_model import INSTALL_HINT, JudgeModelMissing
from .verifier import Judgement, nothing_to_check

SYSTEM = "You are a careful fact checker. You answer only Yes or No."
QUESTION = "Is the hypothesis fully supported by the premise alone? Answer Yes or No."
ANSWERS_QUESTION = "Does the answer say what the question asks for? Answer Yes or No."
CONTEXT_TOKENS = 2048
MAX_TEXT_TOKENS = 700         # each of premise and hypothesis is cut to this many tokens, so both fit
SUPPORTED_AT = 0.5            # P(yes) at or above which the judge votes supported, else refuted
ANSWERS_AT = 0.7              # P(yes) at which the judge reads an answer as answering (dev-chosen: docs/evaluation.md)


class YesNoModel(Protocol):
    """What the judge needs of a language model: P(yes) of its two questions."""

    def p_yes(self, premise: str, hypothesis: str) -> float: ...

    def p_answers(self, question: str, answer: str) -> float: ...


class QwenYesNo:
    """The GGUF model in llama.cpp; one pair at a time (a llama.cpp context is not shared between threads)."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # idle threads must not spin on a shared CPU
        try:
            import llama_cpp
        except ImportError:
            raise JudgeModelMissing(f"llama-cpp-python is not installed: {INSTALL_HINT}") from None
        self._llama_cpp = llama_cpp
        threads = threads or os.cpu_count() or 1
        self._llm = llama_cpp.Llama(model_path=str(path), n_ctx=CONTEXT_TOKENS, n_threads=threads,
                                    n_threads_batch=threads, verbose=False)
        self._yes = self._token("Yes")
        self._no = self._token("No")
        self._lock = threading.Lock()

    def _token(self, word: str) -> int:
        return self._llm.tokenize(word.encode(), add_bos=False, special=False)[0]

    def _plain(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8", "replace"), add_bos=False, special=False)[:MAX_TEXT_TOKENS]

    def _template(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode(), add_bos=False, special=True)

    def p_yes(self, premise: str, hypothesis: str) -> float:
        """P(the premise alone supports the hypothesis)."""
        return self._ask((("Premise", premise), ("Hypothesis", hypothesis)), QUESTION)

    def p_answers(self, question: str, answer: str) -> float:
        """P(the answer says what the question asks for), whether or not it is true."""
        return self._ask((("Question", question), ("Answer", answer)), ANSWERS_QUESTION)

    def _ask(self, fields: tuple[tuple[str, str], ...], ask: str) -> float:
        """P(yes) for a user turn of labelled untrusted fields, then the fixed question."""
        tokens = self._template(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n")
        for number, (label, text) in enumerate(fields):
            tokens += self._template(f"{chr(10) if number else ''}{label}: ") + self._plain(text)
        tokens += self._template(f"\n{ask}<|im_end|>\n<|im_start|>assistant\n")
        with self._lock:
            self._llm.reset()
            self._llm.eval(tokens)
            logits = self._llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
            yes, no = float(logits[self._yes]), float(logits[self._no])
        return 1.0 / (1.0 + math.exp(no - yes))


class JudgeVerifier:
    """A verifier backend: the claim against its aligned evidence (the closest sentence of each cited passage,
    as the meaning check reads it), voting supported or refuted with P(yes) as its score."""

    def __init__(self, model: YesNoModel, name: str = "llm-judge", supported_at: float = SUPPORTED_AT,
                 answers_at: float = ANSWERS_AT) -> None:
        self.model, self.name, self.supported_at, self.answers_at = model, name, supported_at, answers_at

    def answers_sync(self, question: str, answer: str) -> tuple[float, str]:
        """P(the answer says what the question asks for), and why, for the engine's relevance check."""
        p = round(self.model.p_answers(question, answer), 4)
        reading = "answering" if p >= self.answers_at else "not answering"
        return p, f"the judge reads it as {reading} the question (P(yes) = {p:.2f})"

    def judge_sync(self, claim: str, evidence: Sequence[Chunk]) -> Judgement:
        if (unchecked := nothing_to_check(claim, evidence, self.name)) is not None:
            return unchecked
        premise = aligned_evidence(claim, [c.text for c in evidence])
        if not premise:
            return Judgement(ClaimLabel.NOT_ENOUGH, 1.0, "no sentence of its evidence shares a word with it", self.name)
        p = self.model.p_yes(premise, claim)
        if p >= self.supported_at:
            return Judgement(ClaimLabel.SUPPORTED, round(p, 4), f"the judge reads its evidence as supporting it "
                                                                f"(P(yes) = {p:.2f})", self.name)
        return Judgement(ClaimLabel.REFUTED, round(1.0 - p, 4), f"the judge reads its evidence as not supporting it "
                                                                 f"(P(yes) = {p:.2f})", self.name)
