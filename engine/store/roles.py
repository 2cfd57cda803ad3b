"""Who may do what on a team store, granted in PostgreSQL itself: a viewer's login cannot write however it
connects (the desk, psql, a script), because the server refuses it, not the desk's code.

Three group roles (`make db` creates them; an admin makes each person a login role in one of them):
    quorum_viewer     reads every table
    quorum_operator   a viewer who runs a desk: records questions, decides reviews, quarantines and releases
                      agents, acknowledges alerts, approves tool calls
    quorum_admin      an operator who also silences alerts for the whole team
The schema's owner (the role that ran the migrations) applies the grants after each migration, so a new table is
never left readable by nobody or writable by all. The audit's actor for an operator's act is the signed-in role.
"""
from __future__ import annotations

VIEWER, OPERATOR, ADMIN = "quorum_viewer", "quorum_operator", "quorum_admin"
TEAM_ROLES = (VIEWER, OPERATOR, ADMIN)

# What a working desk writes as it answers and decides (the engine records every question, its agent calls,
# the gateway's traces and the audit chain), and what its operator's decisions change.
_OPERATOR_INSERTS = ("questions", "agent_calls", "audit", "approvals", "review_joins", "review_votes", "trust", "trust_history", "alerts",
                     "memory_entries", "memory_reads", "memory_snapshots", "trace_events", "gateway_decisions",
                     "tool_calls", "outbox")
_OPERATOR_UPDATES = ("approvals", "trust", "alerts", "memory_entries", "tool_calls",
                     "refusals")     # marked folded into the audit chain (engine.store.refusals)
_ADMIN_WRITES = ("silences",)


def team_grants(schema: str, tables: set[str]) -> tuple[str, ...]:
    """The GRANTs for the tables this schema has (a table a later version adds is granted once it exists). Each
    role holds every grant of the one below it, so a person is a member of one role."""
    def present(names: tuple[str, ...]) -> str:
        return ", ".join(n for n in names if n in tables)
    out = [f'GRANT USAGE ON SCHEMA "{schema}" TO {VIEWER}, {OPERATOR}, {ADMIN}',
           f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {VIEWER}, {OPERATOR}, {ADMIN}',
           f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {OPERATOR}, {ADMIN}',
           # Anyone signed in may have a refused write of theirs kept (engine.store.refusals); nothing else.
           f'GRANT EXECUTE ON FUNCTION "{schema}".quorum_refused(TEXT, TEXT) TO {VIEWER}, {OPERATOR}, {ADMIN}']
    for privilege, names, roles in (("INSERT", _OPERATOR_INSERTS, (OPERATOR, ADMIN)),
                                    ("UPDATE", _OPERATOR_UPDATES, (OPERATOR, ADMIN)),
                                    ("INSERT, UPDATE", _ADMIN_WRITES, (ADMIN,))):
        if present(names):
            out.append(f"GRANT {privilege} ON {present(names)} TO {', '.join(roles)}")
    return tuple(out)
