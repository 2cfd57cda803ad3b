"""The permission matrix: default deny, role groups, own-namespace memory, and config errors that name
the file and the key."""
import textwrap

import pytest

from engine import ConfigError, load_fleet
from engine.gateway.permissions import (AgentPermissions, MemoryAccess, MemoryOp, PermissionMatrix, expand_targets,
                                        role_group)
from engine.gateway.permissions_config import DEFAULT_PERMISSIONS, load_permissions
from engine.types import Role, TrustLevel

BUILTIN = ("ret-minilm", "ret-e5", "ret-bm25", "ret-bm25-rogue", "gen-alpha", "gen-beta", "gen-gamma", "gen-llm",
           "ver-e5")


def write(tmp_path, body: str):
    path = tmp_path / "permissions.toml"
    path.write_text(textwrap.dedent(body))
    return path


@pytest.fixture
def matrix() -> PermissionMatrix:
    return PermissionMatrix(agents=(
        AgentPermissions("gen-a", ("memory.write", "memory.read", "send_email"), MemoryAccess.OWN,
                         ("role:verifier", "gen-b"), approval_mode=True),
        AgentPermissions("gen-b", ("sql_query", "send_email"), MemoryAccess.NONE, (), approval_mode=False),
        AgentPermissions("ret-a", (), MemoryAccess.NONE, ("role:generator",)),
    ), source="perm.toml")


# --- the built-in file --------------------------------------------------------------------------
def test_builtin_file_loads_against_the_builtin_fleet_and_says_what_the_brief_says():
    fleet_ids = [a.id for a in load_fleet().agents]
    m = load_permissions(known_agents=fleet_ids)
    assert m.source == str(DEFAULT_PERMISSIONS)
    assert set(BUILTIN) <= set(m.agent_ids)
    email = m.check_tool("gen-alpha", "send_email")
    assert email.allowed and email.needs_approval
    for gen in ("gen-beta", "gen-gamma", "gen-llm"):
        assert not m.check_tool(gen, "send_email").allowed
        assert m.check_tool(gen, "sql_query").allowed and not m.check_tool(gen, "sql_query").needs_approval
        assert m.check_memory(gen, gen, "write").allowed
        assert m.check_send(gen, "ver-e5", Role.VERIFIER).allowed
        assert not m.check_send(gen, "gen-alpha", Role.GENERATOR).allowed
    for ret in ("ret-minilm", "ret-e5", "ret-bm25", "ret-bm25-rogue"):
        assert all(not m.check_tool(ret, t).allowed for t in ("memory.write", "memory.read", "sql_query",
                                                              "send_email"))
        assert m.check_send(ret, "gen-beta", Role.GENERATOR).allowed
        assert m.check_send(ret, "ver-e5", Role.VERIFIER).allowed
        assert not m.check_send(ret, "ret-e5" if ret != "ret-e5" else "ret-bm25", Role.RETRIEVER).allowed
        assert not m.check_memory(ret, ret, "read").allowed
    for tool in ("memory.write", "memory.read", "sql_query", "send_email", "message"):
        assert not m.check_tool("ver-e5", tool).allowed
    assert not m.check_send("ver-e5", "gen-alpha", Role.GENERATOR).allowed
    assert m.external_input.trust is TrustLevel.EXTERNAL and m.external_input.sanitise
    assert m.external_input.max_length == 20000
    assert m.tools.send_email.allowed_domains == ("example.org",)
    assert m.tools.sql_query.read_only


# --- default deny --------------------------------------------------------------------------------
def test_unknown_agent_is_refused_everything(matrix):
    for decision in (matrix.check_tool("stranger", "memory.read"), matrix.check_send("stranger", "gen-a", "generator"),
                     matrix.check_memory("stranger", "stranger", MemoryOp.READ)):
        assert not decision.allowed and not decision.needs_approval
        assert "stranger" in decision.why and "perm.toml" in decision.why and "default deny" in decision.why


def test_tool_not_listed_or_not_a_tool_is_refused(matrix):
    no = matrix.check_tool("gen-b", "memory.write")
    assert not no.allowed
    assert "gen-b" in no.why and "memory.write" in no.why and "allowed_tools" in no.why
    bogus = matrix.check_tool("gen-a", "shell")
    assert not bogus.allowed and "'shell'" in bogus.why and "not a tool" in bogus.why
    assert not matrix.check_tool("ret-a", "sql_query").allowed


def test_outward_tool_needs_approval_only_in_approval_mode(matrix):
    assert matrix.check_tool("gen-a", "send_email").needs_approval
    assert "approval mode" in matrix.check_tool("gen-a", "send_email").why
    direct = matrix.check_tool("gen-b", "send_email")
    assert direct.allowed and not direct.needs_approval
    assert not matrix.check_tool("gen-a", "memory.write").needs_approval     # memory is not outward


def test_message_tool_follows_can_send_to(matrix):
    assert matrix.check_tool("gen-a", "message").allowed
    refused = matrix.check_tool("gen-b", "message")
    assert not refused.allowed and "can_send_to" in refused.why


# --- role groups ---------------------------------------------------------------------------------
def test_role_group_covers_every_agent_of_the_role_and_no_other(matrix):
    yes = matrix.check_send("gen-a", "ver-9", Role.VERIFIER)
    assert yes.allowed and "role:verifier" in yes.why and "ver-9" in yes.why
    assert matrix.check_send("gen-a", "ver-9", "verifier").allowed          # the role as text
    assert matrix.check_send("gen-a", "ver-9", "role:verifier").allowed
    no = matrix.check_send("gen-a", "ret-a", Role.RETRIEVER)
    assert not no.allowed and "ret-a" in no.why and "can_send_to" in no.why
    assert matrix.check_send("ret-a", "gen-b", Role.GENERATOR).allowed
    assert not matrix.check_send("ret-a", "ver-9", Role.VERIFIER).allowed


def test_without_the_targets_role_only_an_explicit_id_allows(matrix):
    assert not matrix.check_send("gen-a", "ver-9", None).allowed
    assert matrix.check_send("gen-a", "gen-b", None).allowed                 # named by id
    assert matrix.check_send("gen-a", "gen-b", Role.GENERATOR).allowed
    assert not matrix.check_send("gen-a", "gen-a", Role.VERIFIER).allowed   # never to itself


def test_expand_targets():
    roles = {"gen-a": Role.GENERATOR, "gen-b": Role.GENERATOR, "ver-1": Role.VERIFIER, "ret-a": Role.RETRIEVER}
    assert expand_targets(("role:generator", "ver-1", "gen-a"), roles) == ("gen-a", "gen-b", "ver-1")
    assert expand_targets((role_group(Role.VERIFIER),), roles) == ("ver-1",)
    assert expand_targets((), roles) == ()


# --- memory --------------------------------------------------------------------------------------
def test_memory_is_the_agents_own_namespace_only(matrix):
    assert matrix.check_memory("gen-a", "gen-a", "write").allowed
    assert matrix.check_memory("gen-a", "gen-a", MemoryOp.READ).allowed
    other = matrix.check_memory("gen-a", "gen-b", "write")
    assert not other.allowed and "gen-a" in other.why and "'gen-b'" in other.why and "no shared pool" in other.why
    shared = matrix.check_memory("gen-a", "shared", "read")
    assert not shared.allowed
    none = matrix.check_memory("gen-b", "gen-b", "read")
    assert not none.allowed and "memory_access" in none.why and "none" in none.why
    assert not matrix.check_memory("gen-a", "gen-a", "delete").allowed


def test_duplicate_agent_in_a_matrix_is_an_error():
    with pytest.raises(ValueError, match="twice"):
        PermissionMatrix(agents=(AgentPermissions("a"), AgentPermissions("a")))


# --- the config file -----------------------------------------------------------------------------
GOOD = """
version = 1
[memory]
shared_pool = false
[external_input]
trust = "EXTERNAL"
sanitise = true
max_length = 500
[tools.send_email]
allowed_domains = ["example.org", "mail.example.com"]
[tools.sql_query]
read_only = true
tables = ["products"]
max_rows = 7
[agents.gen-a]
allowed_tools = ["memory.write", "memory.read", "send_email"]
memory_access = "own"
can_send_to = ["role:verifier", "gen-b"]
approval_mode = true
[agents.gen-b]
"""


def test_file_parses_and_missing_keys_take_the_restrictive_default(tmp_path):
    m = load_permissions(write(tmp_path, GOOD))
    a, b = m.get("gen-a"), m.get("gen-b")
    assert a.allowed_tools == ("memory.write", "memory.read", "send_email") and a.memory_access is MemoryAccess.OWN
    assert a.can_send_to == ("role:verifier", "gen-b") and a.approval_mode
    assert b.allowed_tools == () and b.memory_access is MemoryAccess.NONE and b.can_send_to == () and b.approval_mode
    assert m.tools.send_email.allowed_domains == ("example.org", "mail.example.com")
    assert m.tools.sql_query.tables == ("products",) and m.tools.sql_query.max_rows == 7
    assert m.external_input.max_length == 500
    assert m.source == str(tmp_path / "permissions.toml")


def test_known_agents_check(tmp_path):
    path = write(tmp_path, GOOD)
    load_permissions(path, known_agents=["gen-a", "gen-b", "ver-1"])
    with pytest.raises(ConfigError) as err:
        load_permissions(path, known_agents=["gen-b", "ver-1"])
    assert err.value.key == "agents.gen-a" and "no agent 'gen-a' in the fleet" in err.value.reason
    with pytest.raises(ConfigError) as err:
        load_permissions(write(tmp_path, GOOD.replace('"gen-b"]', '"gen-z"]')), known_agents=["gen-a", "gen-b"])
    assert err.value.key == "agents.gen-a.can_send_to[1]"


BAD = [
    ("[memory]\nshared_pool = true\n", "memory.shared_pool", "no shared memory pool"),
    ("[memory]\nshared_pool = \"no\"\n", "memory.shared_pool", "true or false"),
    ("[memory]\npool = false\n", "memory.pool", "unknown key"),
    ("[agents.gen-a]\nallowd_tools = []\n", "agents.gen-a.allowd_tools", "unknown key"),
    ("[agents.gen-a]\nallowed_tools = \"memory.read\"\n", "agents.gen-a.allowed_tools", "list of strings"),
    ("[agents.gen-a]\nallowed_tools = [\"shell\"]\n", "agents.gen-a.allowed_tools[0]", "unknown tool 'shell'"),
    ("[agents.gen-a]\nallowed_tools = [\"sql_query\", \"sql_query\"]\n", "agents.gen-a.allowed_tools[1]", "twice"),
    ("[agents.gen-a]\nallowed_tools = [\"message\"]\n", "agents.gen-a.allowed_tools[0]", "can_send_to"),
    ("[agents.gen-a]\nallowed_tools = [\"memory.write\"]\nmemory_access = \"none\"\n",
     "agents.gen-a.allowed_tools[0]", "memory_access is none"),
    ("[agents.gen-a]\nmemory_access = \"shared\"\n", "agents.gen-a.memory_access", "no shared memory pool"),
    ("[agents.gen-a]\nmemory_access = \"all\"\n", "agents.gen-a.memory_access", "own or none"),
    ("[agents.gen-a]\ncan_send_to = [\"role:admin\"]\n", "agents.gen-a.can_send_to[0]", "unknown role group"),
    ("[agents.gen-a]\ncan_send_to = [\"gen-a\"]\n", "agents.gen-a.can_send_to[0]", "itself"),
    ("[agents.gen-a]\ncan_send_to = [\"a b\"]\n", "agents.gen-a.can_send_to[0]", "agent id or a role group"),
    ("[agents.gen-a]\napproval_mode = \"yes\"\n", "agents.gen-a.approval_mode", "true or false"),
    ("[agents]\ngen-a = 3\n", "agents.gen-a", "expected a table"),
    ("agents = [\"gen-a\"]\n", "agents", "one table per agent"),
    ("[external_input]\ntrust = \"SYSTEM\"\n", "external_input.trust", "may never instruct"),
    ("[external_input]\ntrust = \"ALIEN\"\n", "external_input.trust", "EXTERNAL or TOOL"),
    ("[external_input]\nmax_length = 0\n", "external_input.max_length", "at least 1"),
    ("[external_input]\nsanitise = 1\n", "external_input.sanitise", "true or false"),
    ("[tools.send_email]\nallowed_domains = [\"*.example.org\"]\n", "tools.send_email.allowed_domains[0]", "no wildcards"),
    ("[tools.send_email]\nallowed_domains = [\"bob@example.org\"]\n", "tools.send_email.allowed_domains[0]", "domain"),
    ("[tools.send_email]\nbcc = []\n", "tools.send_email.bcc", "unknown key"),
    ("[tools.sql_query]\nread_only = false\n", "tools.sql_query.read_only", "must be true"),
    ("[tools.sql_query]\ntables = [\"sqlite_master\"]\n", "tools.sql_query.tables[0]", "table name"),
    ("[tools.sql_query]\ntables = [\"a; drop\"]\n", "tools.sql_query.tables[0]", "table name"),
    ("[tools.sql_query]\nmax_rows = 0\n", "tools.sql_query.max_rows", "at least 1"),
    ("[tools.sql_query]\ntimeout_s = -1\n", "tools.sql_query.timeout_s", "positive"),
    ("[tools.shell]\nallowed = true\n", "tools.shell", "unknown key"),
    ("[roles]\nx = 1\n", "roles", "unknown key"),
]


@pytest.mark.parametrize("body, key, message", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_config_errors_name_file_and_key(tmp_path, body, key, message):
    path = write(tmp_path, "version = 1\n" + body)
    with pytest.raises(ConfigError) as err:
        load_permissions(path)
    assert err.value.file == str(path)
    assert err.value.key == key
    assert message in err.value.reason
    assert str(path) in str(err.value) and key in str(err.value)


def test_version_and_missing_file(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_permissions(write(tmp_path, "[memory]\nshared_pool = false\n"))
    assert err.value.key == "version"
    with pytest.raises(ConfigError, match="file not found"):
        load_permissions(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_permissions(write(tmp_path, "version = 1\n[agents.gen-a\n"))
