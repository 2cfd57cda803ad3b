"""Whom the reputation book's rows name: an agent's id on a desk's own file, its identity on a team store.

On a team store, desks share one book, and two desks may run agents that share an id without being the same
agent (each desk's built-in `ret-bm25`). So there a row names the agent itself:
    ret-a#<key fingerprint>    an agent with a configured key: whoever holds that key is that agent, whichever
                               desk asks it (the fleet's shared agents, reached by URL with keys in one fleet file)
    ret-a@<url digest>         an external agent without a key: the service at that address
    ret-a@desk-<desk id>       a built-in agent whose key is made anew at each launch: this desk's own process
Ids cannot hold '#' or '@' (engine.config), so a name says which it is. A desk reads back only its own agents'
rows; another desk's agents are not its book's (and never sit on its committees).
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from ..types import AgentSpec

_DIGEST = 16       # hex characters of a fingerprint: 64 bits, never equal by chance among a team's agents


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:_DIGEST]


def identity(spec: AgentSpec, key: bytes | None, desk: str) -> str:
    """The agent's name in a team store's book (see the module's table). key: its configured key, if any."""
    if key:
        return f"{spec.id}#{_digest(key)}"
    if not spec.builtin:
        return f"{spec.id}@{_digest(spec.url.encode('utf-8'))}"
    return f"{spec.id}@desk-{desk}"


def is_identity(name: str) -> bool:
    return "#" in name or "@" in name


@dataclass(frozen=True)
class BookNames:
    """agent id <-> its name in the book. Empty (a desk's own file): every agent is named by its id."""
    names: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, agents: Iterable[AgentSpec], key_of: Callable[[str], bytes | None], desk: str) -> "BookNames":
        """key_of(agent id): the agent's configured key (None for one made per launch, or none)."""
        return cls({spec.id: identity(spec, key_of(spec.id) if spec.security.keyed else None, desk)
                    for spec in agents})

    @functools.cached_property
    def _ids(self) -> dict[str, str]:
        return {stored: agent_id for agent_id, stored in self.names.items()}

    def stored(self, agent_id: str) -> str:
        return self.names.get(agent_id, agent_id)

    def local(self, name: str) -> str | None:
        """The agent id a stored row names, or None for a row that is not one of this desk's agents (another
        desk's agent, or a row written by id alone for an agent this desk names by its identity)."""
        if not self.names:
            return name
        if name in self._ids:
            return self._ids[name]
        if is_identity(name) or name in self.names:
            return None
        return name


def book_names(agents: Iterable[AgentSpec], key_of: Callable[[str], bytes | None], shared: bool) -> BookNames:
    """The names a desk's book uses on its store: identities on a team store, ids on a desk's own file."""
    if not shared:
        return BookNames()
    from ..store.anchors import desk_id
    return BookNames.of(agents, key_of, desk_id())
