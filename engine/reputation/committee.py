"""Who confirms evidence that rests on peers' outputs, so colluders cannot slander an honest agent.

The committee for a change to agent X is the `committee_size` longest-standing agents (earliest first seen,
ties by id) other than X that are active (not quarantined, not on probation) and score at least
`committee_floor`. Evidence the engine checked itself lands without one. Any other evidence lands only if a
strict majority of the committee are among its witnesses; with fewer than 3 members no committee can form,
and only engine-checked evidence lands. Colluders are new agents or a minority of the old ones, so they
cannot outvote the members who did not see what they claim.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..types import Role
from .evidence import Observation
from .records import AgentStanding, StandingState
from ..settings.reputation import ReputationSettings

MIN_MEMBERS = 3


@dataclass(frozen=True)
class Confirmation:
    confirmed: bool
    confirmed_by: tuple[str, ...]      # committee members among the witnesses (empty when the engine checked it)
    why: str


def committee(agents: Iterable[AgentStanding], subject: str, settings: ReputationSettings,
              role: Role | None = None) -> tuple[str, ...]:
    """role: draw members from the subject's peers only (retrievers judge retrieval evidence): only they
    can have witnessed it, since a witness is an agent whose own output on the question agrees."""
    members = sorted((a for a in agents if a.agent_id != subject and a.state is StandingState.ACTIVE
                      and a.score >= settings.committee_floor and (role is None or a.role is role)),
                     key=lambda a: (a.first_seen, a.agent_id))
    return tuple(a.agent_id for a in members[:settings.committee_size])


def confirm(obs: Observation, members: tuple[str, ...]) -> Confirmation:
    if obs.engine_checked:
        return Confirmation(True, (), "checked by the engine")
    if len(members) < MIN_MEMBERS:
        return Confirmation(False, (), f"rests on peers and no committee can form ({len(members)} eligible agents, "
                                  f"{MIN_MEMBERS} needed); only the engine's own checks land")
    seen = tuple(m for m in members if m in obs.witnesses)
    witnesses = ", ".join(sorted(obs.witnesses)) or "none"
    if 2 * len(seen) > len(members):
        return Confirmation(True, seen, f"confirmed by {len(seen)} of {len(members)} committee members "
                                   f"({', '.join(seen)})")
    return Confirmation(False, (), f"{len(seen)} of {len(members)} committee members ({', '.join(members)}) "
                                   f"witnessed it; a majority is needed (witnesses: {witnesses})")
