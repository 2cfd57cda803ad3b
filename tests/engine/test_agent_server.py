"""The built-in agents' HTTP face: requests that break the protocol get a 400 naming the problem."""
import httpx
import pytest

from engine.agents.extractive import ExtractiveGenerator
from engine.agents.retrievers import BM25Retriever
from engine.agents.server import MAX_REQUEST_BYTES, build_app
from engine.ingest.corpus import load_corpus
from engine.types import AgentKind, AgentSpec, FaultKind, FaultProfile, Role

from ..conftest import TEST_CORPUS

CORPUS = load_corpus(TEST_CORPUS)


def client(role=Role.RETRIEVER, fault=FaultProfile()) -> httpx.AsyncClient:
    spec = AgentSpec(id="a", role=role, kind=AgentKind.QUORUM_HTTP, backend="bm25", fault=fault)
    backend = BM25Retriever(CORPUS) if role is Role.RETRIEVER else ExtractiveGenerator()
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=build_app(spec, backend, len(CORPUS.chunks))),
                             base_url="http://agent")


@pytest.mark.parametrize("body, fragment", [
    (b"{not json", "not JSON"),
    (b'{"query": "", "k": 3}', "query must be a non-empty string"),
    (b'{"query": "moons", "k": 0}', "k must be an integer"),
    (b'{"query": "moons", "k": true}', "k must be an integer"),
    (b'["moons"]', "JSON object"),
])
async def test_bad_retrieve_requests_get_400(body, fragment):
    async with client() as http:
        response = await http.post("/retrieve", content=body)
    assert response.status_code == 400 and fragment in response.json()["error"]


async def test_oversized_request_is_refused():
    async with client() as http:
        response = await http.post("/retrieve", content=b'{"query": "' + b"a" * MAX_REQUEST_BYTES + b'"}')
    assert response.status_code == 400 and "over" in response.json()["error"]


async def test_retrieve_ranks_the_relevant_passage_first():
    async with client() as http:
        chunks = (await http.post("/retrieve", json={"query": "tallest volcano", "k": 3})).json()["chunks"]
    assert chunks[0]["id"] == "olympus-mons#0" and chunks[0]["metadata"]["authority"] == 0.9


async def test_generator_cites_what_it_quotes_and_tamperer_changes_it():
    context = [{"id": c.id, "text": c.text, "source": c.source, "score": 1.0, "metadata": dict(c.metadata)}
               for c in CORPUS.chunks if c.id.startswith("voyager")]
    async with client(Role.GENERATOR) as http:
        honest = (await http.post("/generate", json={"query": "When was Voyager 1 launched?", "context": context})).json()
    assert "1977" in honest["answer"] and honest["claims"][0]["citations"] == ["voyager-1#0"]
    async with client(Role.GENERATOR, FaultProfile(kind=FaultKind.TAMPER, seed=1)) as http:
        lie = (await http.post("/generate", json={"query": "When was Voyager 1 launched?", "context": context})).json()
    assert lie["answer"] != honest["answer"] and lie["claims"][0]["citations"] == ["voyager-1#0"]


async def test_retriever_has_no_generate_route():
    async with client() as http:
        assert (await http.post("/generate", json={})).status_code in (404, 405)
