"""The fault profiles of the generation evaluation: which lie, told by how many generators, beside
how many honest ones. Generator ids are shuffled per question, so no id marks the liar."""
from __future__ import annotations

from dataclasses import dataclass

from engine.errors import InputError
from .lies import LieKind

CLEAN = "clean"


@dataclass(frozen=True)
class Profile:
    name: str
    lie: LieKind
    liars: int = 1                  # generators telling the (same) lie
    honest: int = 2                 # honest generators beside them (drawn from the three kinds)
    quote_on_challenge: bool = False   # the liar shows the real sentence when asked for its evidence
    about: str = ""

    @property
    def legacy(self) -> bool:
        return self.lie.legacy


HEADLINE = (
    Profile("swap-in-passage", LieKind.SWAP_IN_PASSAGE,
            about="a name or number of the answer sentence replaced by another of its type from the same passage"),
    Profile("role-swap", LieKind.ROLE_SWAP, about="two names of the answer sentence exchanged"),
    Profile("true-irrelevant", LieKind.TRUE_IRRELEVANT,
            about="a true sentence of a non-supporting passage, correctly cited, without the gold answer"),
    Profile("wrong-relevant", LieKind.WRONG_RELEVANT,
            about="the gold answer replaced by another entity of its type from the context, citing the relevant chunk"),
    Profile("collude-2v1", LieKind.SWAP_IN_PASSAGE, liars=2, honest=1,
            about="two generators tell the same swap-in-passage lie against one honest generator"),
    Profile("liar-alone", LieKind.SWAP_IN_PASSAGE, liars=1, honest=0,
            about="the only generator up tells a swap-in-passage lie"),
    Profile("challenge-liar", LieKind.SWAP_IN_PASSAGE, quote_on_challenge=True,
            about="swap-in-passage, and when challenged the liar quotes the real sentence"),
    Profile("irrelevant-alone", LieKind.TRUE_IRRELEVANT, liars=1, honest=0,
            about="the only generator up answers with a true sentence that does not answer"),
    Profile("irrelevant-2v1", LieKind.TRUE_IRRELEVANT, liars=2, honest=1,
            about="two generators give the same true sentence that does not answer, against one honest generator"),
    Profile("role-swap-alone", LieKind.ROLE_SWAP, liars=1, honest=0,
            about="the only generator up exchanges two names of the answer sentence"),
    Profile("role-swap-2v1", LieKind.ROLE_SWAP, liars=2, honest=1,
            about="two generators tell the same role swap against one honest generator"),
    Profile("splice", LieKind.SPLICE,
            about="the answer sentence's start joined to another passage's sentence end, citing both passages"),
    Profile("splice-alone", LieKind.SPLICE, liars=1, honest=0, about="the only generator up tells a splice"),
)
# Lies an LLM writes (bench.evaluation.llm_lies): asked for by name, never by default (they need `make judge`).
LLM_WRITTEN = (
    Profile("llm-rewrite", LieKind.LLM_REWRITE,
            about="the wrong-relevant lie rewritten by the Qwen 1.5B model in its own words"),
    Profile("llm-rewrite-2v1", LieKind.LLM_REWRITE, liars=2, honest=1,
            about="two generators tell the same LLM-written lie against one honest generator"),
    Profile("llm-rewrite-alone", LieKind.LLM_REWRITE, liars=1, honest=0,
            about="the only generator up tells an LLM-written lie"),
)
LEGACY = tuple(Profile(kind.value, kind, about="legacy rule from engine.agents.faults") for kind in LieKind
               if kind.legacy)
ALL = {p.name: p for p in HEADLINE + LLM_WRITTEN + LEGACY}
HEADLINE_NAMES = tuple(p.name for p in HEADLINE)
NOT_GENERATION_FAULTS = {
    "collude": ("a retrieval-side lie (colluding retrievers push one shared fabricated passage into the context); "
                "generation collusion is `collude-2v1`, retrieval collusion is `eval retrieval --attack agent "
                "--collude`"),
}


def parse_profiles(text: str) -> tuple[Profile, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names:
        raise InputError("--profiles: name at least one profile")
    for name in names:
        if name in NOT_GENERATION_FAULTS:
            raise InputError(f"--profiles: {name} is not a generation fault: {NOT_GENERATION_FAULTS[name]}")
        if name not in ALL:
            raise InputError(f"--profiles: expected some of {', '.join(ALL)}, found {name!r}")
    return tuple(ALL[name] for name in names)
