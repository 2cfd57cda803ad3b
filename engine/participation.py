"""How many agents took part in a question, and whether a quorum held: the one definition, used by the
pipeline (Answer.participation and the answer's reason), the alert rules (quorum_lost), `ask --json`
and the console's answer header.

A role's quorum holds when at least `needed` of the agents asked gave a usable reply (CallStatus.OK),
where needed = max(the mode's minimum, more than half of those asked):
- retrievers: 3 in the full and strict modes, because with fewer answering lists secure retrieval's
  passage quorum does not apply (engine.retrieval.secure: every passage would pass); 2 in the
  optimistic mode (the low tier), whose simple comparison needs two lists;
- generators: 2, so an answer is checked against another one; 1 where the tier's policy asks for a
  single generator (the low tier).
Why more than half as well: vote weights are shared among the agents that answered, so agents that
failed (or were knocked out) hand their weight to the rest, a liar among them included.

"Asked" is what the tier's policy chose among the agents that were up and eligible; agents that were
already down, starting or stopped are not asked, and are counted as `unavailable` beside it. A reply the
gateway then dropped still counts as answered: the agent took part. A question with several retrieve
stages (multi-hop) reports its weakest one. A role the question never reached (no generator is asked
when no passage survived retrieval) needs nothing.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from .types import AgentOutcome, AgentState, CallStatus, Participation, RetrievalMode, RoleParticipation, Role

RETRIEVERS_FOR_PASSAGE_QUORUM = 3     # secure retrieval applies its passage quorum from this many lists on
RETRIEVERS_TO_COMPARE = 2             # the optimistic mode compares two lists
GENERATORS_TO_CROSS_CHECK = 2


def minimum(role: Role, retrieval_mode: RetrievalMode, policy_generators: int) -> int:
    """The fewest answers a role's quorum needs at a tier, whatever the number asked."""
    if role is Role.RETRIEVER:
        return RETRIEVERS_TO_COMPARE if retrieval_mode == RetrievalMode.OPTIMISTIC else RETRIEVERS_FOR_PASSAGE_QUORUM
    return min(GENERATORS_TO_CROSS_CHECK, policy_generators) if policy_generators else GENERATORS_TO_CROSS_CHECK


def needed(asked: int, least: int) -> int:
    return max(least, asked // 2 + 1)


def role_participation(role: Role, outcomes: Sequence[AgentOutcome], least: int, *, reached: bool = True,
                       unavailable: int = 0) -> RoleParticipation:
    """One call batch of a role (one retrieve stage, or the generators): each agent's last call counts."""
    last = {o.agent_id: o.status for o in outcomes if o.role is role}
    answered = sum(status is CallStatus.OK for status in last.values())
    failed = Counter(status.value for status in last.values() if status is not CallStatus.OK)
    need = needed(len(last), least) if reached else 0
    return RoleParticipation(role, asked=len(last), answered=answered, failed=dict(sorted(failed.items())),
                             needed=need, unavailable=unavailable, held=answered >= need)


def weakest(parts: Iterable[RoleParticipation]) -> RoleParticipation | None:
    """The stage whose quorum fell shortest (fewest answers beyond what it needed), the first on a tie."""
    return min(parts, key=lambda p: (p.answered - p.needed, p.answered), default=None)


def participation(retrieve_batches: Sequence[Sequence[AgentOutcome]], generator_calls: Sequence[AgentOutcome] | None,
                  *, retrieval_mode: RetrievalMode, policy_generators: int,
                  unavailable: dict[Role, int] | None = None) -> Participation:
    """retrieve_batches: each retrieve stage's calls (none: no retriever could be asked). generator_calls:
    None when the question never reached its generators."""
    unavailable = unavailable or {}
    least_r = minimum(Role.RETRIEVER, retrieval_mode, policy_generators)
    retrievers = weakest(role_participation(Role.RETRIEVER, batch, least_r,
                                            unavailable=unavailable.get(Role.RETRIEVER, 0))
                         for batch in retrieve_batches) or role_participation(
        Role.RETRIEVER, (), least_r, unavailable=unavailable.get(Role.RETRIEVER, 0))
    generators = role_participation(Role.GENERATOR, generator_calls or (),
                                    minimum(Role.GENERATOR, retrieval_mode, policy_generators),
                                    reached=generator_calls is not None,
                                    unavailable=unavailable.get(Role.GENERATOR, 0))
    return Participation(retrievers, generators, quorum_held=retrievers.held and generators.held)


def unavailable_counts(views) -> dict[Role, int]:
    """Enabled agents per role that are not up (down, starting, stopped): they could not be asked."""
    counts: Counter = Counter()
    for view in views:
        if view.spec.enabled and (view.state is not AgentState.UP or view.stopped or not view.url):
            counts[view.spec.role] += 1
    return dict(counts)


# --- words for people (the answer's reason, the alert, the console header, the CLI) ------------------
def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def role_line(part: RoleParticipation) -> str:
    """'3 of 5 retrievers'."""
    return f"{part.answered} of {_plural(part.asked, part.role.value)}"


def summary(p: Participation) -> str:
    """'3 of 5 retrievers, 2 of 3 generators answered' (a role the question never reached is left out)."""
    parts = [role_line(p.retrievers)] + ([role_line(p.generators)] if p.generators.needed or p.generators.asked else [])
    return ", ".join(parts) + " answered"


def _why(part: RoleParticipation) -> str:
    details = [f"{n} {status.replace('_', ' ')}" for status, n in part.failed.items()]
    if part.unavailable:
        details.append(f"{part.unavailable} not up to be asked")
    return f" ({'; '.join(details)})" if details else ""


def shortfall(p: Participation) -> str:
    """For the answer's reason and the alert: 'quorum not held: 2 of 5 retrievers answered, 3 needed
    (2 timeout, 1 down)'; "" when it held."""
    short = [f"{role_line(part)} answered, {part.needed} needed{_why(part)}"
             for part in (p.retrievers, p.generators) if not part.held]
    return "quorum not held: " + "; ".join(short) if short else ""
