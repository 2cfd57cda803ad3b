"""The agent protocol as data: one definition validates both sides and is published as OpenAPI / JSON Schema."""
import json
from pathlib import Path

import httpx
import pytest

import main
from engine.agents import schema
from engine.agents.extractive import ExtractiveGenerator
from engine.agents.protocol import (BadRequest, generation_to_json, loads, parse_actions, parse_challenge_reply,
                                    parse_chunks, parse_claim_request, parse_generate_request, parse_generation,
                                    parse_health, parse_judgement, parse_request, parse_retrieve_request)
from engine.agents.server import build_app
from engine.errors import AgentProtocolError
from engine.types import AgentKind, AgentSpec, Chunk, Claim, ClaimLabel, Generation, Role, ToolRequest

PROTOCOL = Path(__file__).resolve().parents[2] / "resources" / "protocol"
CHUNK = {"id": "a#0", "text": "Mars has two moons.", "source": "s", "score": 0.5, "metadata": {"title": "A"}}


# --- the published documents never drift from the code ----------------------------------------------
def test_committed_openapi_document_is_what_the_code_generates():
    committed = (PROTOCOL / "openapi.json").read_text(encoding="utf-8")
    assert committed == schema.render(schema.openapi()), \
        "resources/protocol/openapi.json is stale: python main.py agents schema --out resources/protocol/openapi.json"


def test_committed_json_schema_is_what_the_code_generates():
    committed = (PROTOCOL / "agent-protocol.schema.json").read_text(encoding="utf-8")
    assert committed == schema.render(schema.json_schema()), \
        ("resources/protocol/agent-protocol.schema.json is stale: python main.py agents schema --format jsonschema "
         "--out resources/protocol/agent-protocol.schema.json")


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _resolve(doc: dict, ref: str):
    assert ref.startswith("#/"), ref
    node = doc
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def test_openapi_has_every_operation_and_every_reference_resolves():
    doc = schema.openapi()
    assert doc["openapi"] == "3.1.0"
    assert {(path, method) for path, item in doc["paths"].items() for method in item} == {
        ("/health", "get"), ("/retrieve", "post"), ("/generate", "post"), ("/validate", "post"),
        ("/challenge", "post"), ("/read", "post"), ("/screen", "post")}
    for ref in _refs(doc):
        assert _resolve(doc, ref)["type"] == "object"
    for op in ("retrieve", "generate", "validate", "challenge"):
        spec = doc["paths"][f"/{op}"]["post"]
        assert spec["requestBody"]["required"] and set(spec["responses"]) == {"200", "400", "401", "413"}
        assert {p["name"] for p in spec["parameters"]} == {
            "X-Trace-Id", "X-Quorum-Nonce", "X-Quorum-Timestamp", "X-Quorum-Signature"}
    bundle = schema.json_schema()
    assert bundle["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert all(_resolve(bundle, ref) for ref in _refs(bundle))


def test_documents_state_the_limits_the_validator_enforces():
    defs = schema.json_schema()["$defs"]
    retrieve = defs["RetrieveRequest"]
    assert retrieve["required"] == ["query"]
    assert retrieve["properties"]["query"]["maxLength"] == schema.MAX_QUERY_CHARS
    assert (retrieve["properties"]["k"]["minimum"], retrieve["properties"]["k"]["maximum"]) == (1, schema.MAX_K)
    assert retrieve["properties"]["k"]["default"] == 5
    reply = defs["GenerateReply"]
    assert set(reply["required"]) == {"answer", "claims", "confidence"}
    assert (reply["properties"]["confidence"]["minimum"], reply["properties"]["confidence"]["maximum"]) == (0, 1)
    assert reply["properties"]["actions"]["maxItems"] == schema.MAX_ACTIONS
    assert reply["properties"]["claims"]["items"] == {"$ref": "#/$defs/Claim"}
    assert defs["Claim"]["properties"]["citations"] == {
        "type": "array", "items": {"type": "string"}, "description": defs["Claim"]["properties"]["citations"]["description"]}
    assert defs["ValidateReply"]["properties"]["verdict"]["enum"] == [label.value for label in ClaimLabel]
    assert defs["Chunk"]["properties"]["source"]["type"] == ["string", "null"]
    assert all(d["additionalProperties"] is True for d in defs.values())
    # Every field of every definition, and nothing else.
    for obj in schema.named_objects():
        assert set(defs[obj.name]["properties"]) == {f.name for f in obj.fields}
        assert set(defs[obj.name].get("required", [])) == {f.name for f in obj.fields if f.required}


def test_one_message_schema_holds_only_what_it_needs():
    one = schema.json_schema("RetrieveReply")
    assert one["$ref"] == "#/$defs/RetrieveReply" and set(one["$defs"]) == {"RetrieveReply", "Chunk"}


def test_schema_command_prints_writes_and_refuses_unknown_messages(tmp_path, capsys):
    assert main.main(["agents", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == schema.openapi()
    out = tmp_path / "protocol.json"
    assert main.main(["agents", "schema", "--format", "jsonschema", "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == schema.json_schema()
    assert main.main(["agents", "schema", "--format", "jsonschema", "--message", "GenerateRequest"]) == 0
    assert json.loads(capsys.readouterr().out)["$ref"] == "#/$defs/GenerateRequest"
    assert main.main(["agents", "schema", "--format", "jsonschema", "--message", "Nope"]) == 2
    assert "RetrieveRequest" in capsys.readouterr().err
    assert main.main(["agents", "schema", "--message", "Chunk"]) == 2


# --- replies: the same typed values as ever, AgentProtocolError naming agent and field ---------------
def test_good_replies_become_the_engine_types():
    assert parse_chunks("r1", {"chunks": [CHUNK]}) == (Chunk("a#0", "Mars has two moons.", "s", 0.5, {"title": "A"}),)
    gen = Generation("Phobos.", ("r",), (Claim("Phobos is a moon.", ("a#0",)),), 0.9,
                     (ToolRequest("memory.write", {"key": "k"}),))
    assert parse_generation("g1", generation_to_json(gen)) == gen
    assert parse_generation("g1", {"answer": "", "claims": [], "confidence": 1}) == Generation("", (), (), 1.0)
    assert parse_judgement("v1", {"verdict": "refuted", "score": 0.25, "reason": None}) == (ClaimLabel.REFUTED, 0.25, "")
    assert parse_challenge_reply("g1", {"quote": "q", "citations": ["a#0"]}) == ("q", ("a#0",))
    assert parse_actions("g1", [{"tool": "t"}]) == (ToolRequest("t", {}),)
    assert parse_health("r1", {"status": "ok", "id": "r1", "role": "retriever"})["chunks"] == 0


def test_unknown_fields_are_ignored_and_null_stands_for_absent_where_the_protocol_says_so():
    chunk = {**CHUNK, "source": None, "x_new": [1, 2]}
    assert parse_chunks("r1", {"chunks": [chunk], "next_page": "abc"})[0].source == ""
    with pytest.raises(AgentProtocolError, match="chunks has type null"):     # not nullable: null is no list
        parse_chunks("r1", {"chunks": None})


@pytest.mark.parametrize("parse, data, reason", [
    (parse_chunks, {"hits": []}, "reply lacks chunks"),
    (parse_chunks, [], "reply has type array, expected a RetrieveReply object"),
    (parse_chunks, {"chunks": [{"id": 5, "text": "x", "score": 1}]}, "chunks[0].id has type integer"),
    (parse_chunks, {"chunks": ["x"]}, "chunks[0] has type string, expected a Chunk object"),
    (parse_chunks, {"chunks": [{**CHUNK, "metadata": []}]}, "chunks[0].metadata has type array"),
    (parse_chunks, {"chunks": [{**CHUNK, "score": True}]}, "chunks[0].score has type boolean"),
    (parse_chunks, {"chunks": [{**CHUNK, "score": 10 ** 400}]}, "chunks[0].score is not a finite number"),
    (parse_chunks, {"chunks": [{**CHUNK, "text": "bad \udc00"}]}, "chunks[0].text holds a lone surrogate"),
    (parse_generation, {"answer": "a", "claims": [], "confidence": 1.5}, "confidence 1.5 is outside 0..1"),
    (parse_generation, {"answer": "a", "claims": [{"text": "x", "citations": [1]}], "confidence": 1},
     "claims[0].citations[0] has type integer"),
    (parse_generation, {"answer": "a", "claims": [], "confidence": 0.5, "reasoning": "one step"},
     "reasoning has type string, expected a list of strings"),
    (parse_generation, {"answer": "a", "claims": [], "confidence": 0.5, "actions": [{"tool": "t"}] * 9},
     "actions holds 9 items; at most 8 are taken"),
    (parse_generation, {"answer": "a", "claims": [], "confidence": 0.5, "actions": [{"params": {}}]},
     "reply lacks actions[0].tool"),
    (parse_judgement, {"verdict": "maybe", "score": 0.5}, "verdict 'maybe' is not one of supported, refuted"),
    (parse_judgement, {"verdict": "supported", "score": -0.5}, "score -0.5 is outside 0..1"),
    (parse_challenge_reply, {"quote": "q"}, "reply lacks citations"),
    (parse_health, {"status": "ok", "id": "", "role": "retriever"}, "id is empty"),
    (parse_health, {"status": "ok", "id": "r", "role": "oracle"}, "role 'oracle' is not one of"),
])
def test_bad_replies_name_the_agent_and_the_field(parse, data, reason):
    with pytest.raises(AgentProtocolError) as caught:
        parse("agent-7", data)
    assert caught.value.agent_id == "agent-7" and caught.value.reason.startswith(reason)


# --- requests: the typed values and the 400's words ------------------------------------------------
def test_good_requests_and_their_defaults():
    assert parse_retrieve_request({"query": "moons"}) == ("moons", 5, "")
    assert parse_retrieve_request({"query": "moons", "k": 3.0, "trace_id": "t"}) == ("moons", 3, "t")
    query, context, trace = parse_generate_request({"query": "q", "context": [CHUNK], "memory": [CHUNK]})
    assert (query, context[0].id, trace) == ("q", "a#0", "")
    assert parse_claim_request({"claim": "c", "evidence": []}, "evidence") == ("c", (), "")
    assert parse_request("challenge", {"claim": "c", "context": [CHUNK]}).chunks[0].text == CHUNK["text"]


@pytest.mark.parametrize("parse, data, reason", [
    (parse_retrieve_request, ["moons"], "body must be a JSON object"),
    (parse_retrieve_request, {"k": 3}, "query must be a non-empty string"),
    (parse_retrieve_request, {"query": " \n"}, "query must be a non-empty string"),
    (parse_retrieve_request, {"query": "q" * 4001}, "query longer than 4000 characters"),
    (parse_retrieve_request, {"query": "q", "k": 51}, "k must be an integer 1..50"),
    (parse_retrieve_request, {"query": "q", "k": 2.5}, "k must be an integer 1..50"),
    (parse_retrieve_request, {"query": "q", "trace_id": 7}, "trace_id must be a string"),
    (parse_generate_request, {"query": "q"}, "context must be a list of Chunk objects"),
    (parse_generate_request, {"query": "q", "context": [{"text": "t", "score": 1}]}, "context[0].id must be a string"),
    (parse_generate_request, {"query": "q", "context": [], "memory": {}}, "memory must be a list of Chunk objects"),
    (lambda d: parse_claim_request(d, "evidence"), {"claim": "c", "evidence": [{**CHUNK, "score": "high"}]},
     "evidence[0].score must be a number"),
    (lambda d: parse_claim_request(d, "context"), {"claim": "", "context": []}, "claim must be a non-empty string"),
])
def test_bad_requests_say_what_is_wrong(parse, data, reason):
    with pytest.raises(BadRequest, match="^" + reason.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        parse(data)


@pytest.mark.parametrize("body, reason", [
    (b'{"query": NaN}', "NaN is not JSON"),
    (b'{"query": "q", "k": 1e999}', "out of a number's range"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"query": "\\ud800"}', "lone surrogate"),
    (b'{"query": "\xff"}', "can't decode"),
    (b'{"query": "q", "k": ' + b"9" * 5000 + b"}", "digits"),
    (b'{"metadata": {"authority": 1' + b"0" * 400 + b"}}", "out of a number's range"),
])
def test_strict_json_refuses_what_json_loads_lets_through(body, reason):
    with pytest.raises(ValueError, match=reason):
        loads(body)
    assert loads(b'{"query": "\\ud83d\\ude00"}') == {"query": "\U0001F600"}   # a surrogate pair is text


@pytest.mark.parametrize("body", [
    b'{"query": "q", "k": ' + b"9" * 5000 + b"}",     # was a 500: int() past Python's 4300-digit limit
    b"[" * 50_000 + b"]" * 50_000,                   # was a 500: RecursionError in json.loads
    # was a 500: the answer quoted the lone surrogate, and the reply could not be encoded as UTF-8
    b'{"query": "moons \\udc80", "context": [{"id": "a", "text": "Mars has two moons \\udc80 here.", "score": 1}]}',
    b'{"query": "moons", "context": [{"id": "a", "text": "Mars has two moons.", "score": NaN}]}',   # was taken
])
async def test_the_built_in_agent_answers_400_to_bodies_that_used_to_crash_it(body):
    spec = AgentSpec(id="g", role=Role.GENERATOR, kind=AgentKind.QUORUM_HTTP, backend="extractive")
    app = build_app(spec, ExtractiveGenerator(), 0)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://agent") as http:
        for path in ("/generate", "/challenge"):
            response = await http.post(path, content=body)
            assert response.status_code == 400, response.text
            assert response.json()["error"]
