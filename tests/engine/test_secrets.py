"""Keys never leave the keyring and the agents' environments: after a question on keyed agents (generated
keys, one from an environment variable, one from a file) none of them is in any log, anywhere in the
SQLite file, in an audit export or in what the command line prints as JSON."""
import asyncio
import base64
import json
import logging
import os
import sqlite3

import main as cli
from engine import CallStatus, Engine, RiskTier, load_fleet, load_settings
from engine.cli.ask import answer_json

from ..conftest import FAST_SETTINGS, write_fleet

ENV_KEY = bytes.fromhex("5e" * 16 + "c7" * 16)
FILE_KEY = bytes.fromhex("a1" * 16 + "9d" * 16)
KEYED = """
    [[agents]]
    id = "ret-keyed-env"
    role = "retriever"
    backend = "bm25"
    key_env = "QUORUM_TEST_KEY_RET"

    [[agents]]
    id = "gen-keyed-file"
    role = "generator"
    backend = "extractive"
    key_file = "gen.key"
    """


def _needles(keys) -> list[bytes]:
    found = []
    for key in keys:
        found += [key, key.hex().encode(), key.hex().upper().encode(), base64.b64encode(key),
                  base64.urlsafe_b64encode(key)]
    return found


def _everything_in_the_database(db_path) -> bytes:
    files = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    with sqlite3.connect(db_path) as db:
        dump = "\n".join(db.iterdump())
    return files + dump.encode()


def test_no_key_is_in_logs_database_exports_or_json(tmp_path, db_path, cache_dir, monkeypatch, caplog, capsys):
    monkeypatch.setenv("QUORUM_TEST_KEY_RET", ENV_KEY.hex())
    (tmp_path / "gen.key").write_text(FILE_KEY.hex() + "\n")
    os.chmod(tmp_path / "gen.key", 0o600)
    fleet_file = write_fleet(tmp_path, extra=KEYED)
    caplog.set_level(logging.DEBUG)

    async def run():
        engine = Engine(load_fleet(fleet_file), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir)
        async with engine:
            answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
            keys = {agent_id: engine.parts.keyring.get(agent_id) for agent_id in (a.id for a in engine.fleet.config.agents)}
            command_lines = [" ".join(c.process.args) for c in engine.parts.launcher._children.values()]
        return answer, keys, command_lines

    answer, keys, command_lines = asyncio.run(run())
    # Every built-in agent ran keyed, and the question went through the signed calls.
    assert all(keys.values()) and keys["ret-keyed-env"] == ENV_KEY and keys["gen-keyed-file"] == FILE_KEY
    assert len(set(keys.values())) == len(keys)           # one key per agent
    assert {"ret-keyed-env", "gen-keyed-file"} <= {o.agent_id for o in answer.agents if o.status is CallStatus.OK}
    assert all(o.status is CallStatus.OK for o in answer.agents)

    out = tmp_path / "out"
    out.mkdir()
    common = ["--db", str(db_path)]
    capsys.readouterr()
    assert cli.main(["audit", "export", "--format", "jsonl", "--out", str(out / "audit.jsonl"), *common]) == 0
    assert cli.main(["audit", "export", "--format", "csv", "--out", str(out / "audit.csv"), *common]) == 0
    assert cli.main(["audit", "list", "--limit", "1000", *common]) == 0
    assert cli.main(["agents", "--json", "--fleet", str(fleet_file), *common]) == 0
    assert cli.main(["trace", answer.trace_id, "--json", *common]) == 0
    printed = capsys.readouterr()
    assert b"engine.started" in (out / "audit.jsonl").read_bytes() and "engine.started" in printed.out

    haystacks = {
        "agent and engine logs": b"".join(p.read_bytes() for p in cache_dir.rglob("*.log")),
        "the SQLite file, every table": _everything_in_the_database(db_path),
        "the audit exports": (out / "audit.jsonl").read_bytes() + (out / "audit.csv").read_bytes(),
        "the command line's output": (printed.out + printed.err).encode(),
        "ask --json": json.dumps(answer_json(answer), ensure_ascii=False).encode(),
        "the engine's log records": caplog.text.encode(),
        "the agents' command lines": " ".join(command_lines).encode(),
        "the fleet file": fleet_file.read_bytes(),
    }
    assert {p.stem for p in (cache_dir / "logs").glob("*.log")} >= set(keys)   # every agent's log was read
    needles = _needles(keys.values())
    leaked = [where for where, haystack in haystacks.items() if any(n in haystack for n in needles)]
    assert not leaked, f"a key is in {leaked}"     # names the places only: a failure must not print the key
