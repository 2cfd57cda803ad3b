"""The reputation book: whom Quorum trusts, learned from evidence, and who is kept out (issue #8). No Qt, no I/O.

The scale
    Inside, each agent has a log-odds value L, clamped to [l_min, l_max]; the score shown is sigmoid(L), in (0, 1).
    - New agents start at `start` = 0.75: configured by the operator, so trusted until shown otherwise, yet below
      what a record earns. Decay leads back to the same point (neutral, L0 = logit(0.75) = ln 3).
    - The cap is 0.95 (l_max = ln 19): an honest record cannot bank unbounded credit, so a sleeper that turns
      falls fast (9 medium-risk lies from the cap to quarantine).
    - The floor is 0.02 (l_min = ln(0.02/0.98)): a liar cannot sink so deep that a repaired agent never returns.
    - Below `quarantine_floor` = 0.2 an agent is quarantined automatically.

Evidence
    All evidence about one agent on one question is one Observation. Any bad evidence makes it a bad question,
    L -= down_step x tier factor; otherwise good evidence makes a good one, L += up_step x tier factor; none
    moves nothing. Tier factors: low 0.5, medium 1, high 1.5. up_step 0.0625, down_step 0.5: their ratio, 8 ~
    ln(0.2/0.05) / -ln(0.8/0.95), makes each step a sequential test's log-likelihood ratio between "lies on
    20% of questions" and "honest, falsely flagged on 5%". An agent with more than about 11% bad questions
    drifts down, one with fewer drifts up. At medium risk a constant liar is quarantined after 5 questions, a
    sleeper at the cap after 9, and an agent that lies on 20% after about 48 (a median over 200 seeds; 65%
    within 60). The price of steps this large: an honest agent falsely flagged on 5% of questions is never
    quarantined in 1,000 (100 seeds) but dips to about 0.4; on 8%, 5 runs in 100 end in quarantine. (The
    first defaults, 0.045 / 0.36, took a median of 66 for the 20% liar.)

Confirmation
    Evidence the engine checked itself (its verifier, an operator's decision, behaviour it measured) lands at
    once. Evidence resting on peers' outputs lands only when a majority of a committee of the longest-standing
    trusted agents witnessed it (engine.reputation.committee), so colluders cannot slander an honest agent.
    Unconfirmed proposals come back as ChangeRejected, for the audit.

Time, behaviour, states
    Scores decay toward neutral with a half-life of 7 days (injected clock), counted from each agent's last
    change; evidence landing brings the pending decay in first. Each agent's latency, reply size, error rate
    and agreement rate are compared with its own history (engine.reputation.baseline); a sudden change costs
    half a lie's step, once per change, and says why. States: ACTIVE, QUARANTINED (no work, vote weight 0), PROBATION after
    an operator's release (score at least 0.45, vote weight at most 0.5, low-risk work only) until 20 good
    questions in a row with a score back at `start`.

    ReputationBook(settings, clock)       register / observe / observe_behaviour / decay / quarantine / release,
                                          record / all / weight / snapshot / eligible, to_rows / load
    Observation, EvidenceReason           what the pipeline reports (GOOD_REASONS / BAD_REASONS, is_good)
    ReputationSettings                    every threshold, with what it trades
    events: ReputationChanged, ChangeRejected, AgentQuarantined, AgentReleased, ProbationEnded, BehaviourShift,
            AlertRaised (its kind: engine.alerts.kinds.AlertKind), as_audit_event

Where the book meets the engine (imported by their module paths, not from here: they need the store)
    keeper      ReputationKeeper: feeds the book every decided answer and operator decision, saves what it did
                (ReputationUpdate) with its audit events
    store       ReputationTables: the standing and the score history (the trust and trust_history tables)
    migrations  their schema step (version 3 of the one SQLite file)
    The command line is engine.cli.reputation; the settings are engine.settings.reputation.
"""
from .baseline import BehaviourBaseline, BehaviourMetric, BehaviourSample, Shift
from .book import AUTOMATIC, ReputationBook
from .committee import Confirmation, committee, confirm
from .events import (EVENT_TYPES, AgentQuarantined, AgentReleased, AlertRaised, BehaviourShift, ChangeRejected,
                     ProbationEnded, ReputationChanged, ReputationEvent, as_audit_event)
from .evidence import BAD_REASONS, GOOD_REASONS, EvidenceReason, Observation, is_good
from .records import ROW_KEYS, AgentStanding, StandingState
from ..settings.reputation import ReputationSettings

__all__ = [
    "ReputationBook", "ReputationSettings", "Observation", "EvidenceReason", "GOOD_REASONS", "BAD_REASONS", "is_good",
    "AgentStanding", "StandingState", "ROW_KEYS", "AUTOMATIC",
    "ReputationEvent", "ReputationChanged", "ChangeRejected", "AgentQuarantined", "AgentReleased", "ProbationEnded",
    "BehaviourShift", "AlertRaised", "EVENT_TYPES", "as_audit_event",
    "BehaviourBaseline", "BehaviourMetric", "BehaviourSample", "Shift", "committee", "confirm", "Confirmation",
]
