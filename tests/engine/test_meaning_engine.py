"""The meaning verifier in the product path: with [meaning] on, the engine loads the shipped artifact at start
(checking it), and every answer's candidates carry their relevance and their claims their entailment, which
`ask --json` reports too. With it off (the default), nothing is read for meaning."""
from __future__ import annotations

from engine import Engine, load_fleet, load_settings

from ..conftest import FAST_SETTINGS

QUESTION = "What are the names of the two moons of Mars?"


def settings_with_meaning(tmp_path, enabled: bool):
    path = tmp_path / "engine.toml"
    path.write_text(FAST_SETTINGS.read_text().replace("[meaning]\nenabled = false",
                                                      f"[meaning]\nenabled = {str(enabled).lower()}"))
    return load_settings(path)


async def test_with_meaning_on_each_candidate_and_claim_is_read_for_meaning(small_fleet_file, db_path, cache_dir,
                                                                             tmp_path):
    from engine.cli.ask import answer_json
    engine = Engine(load_fleet(small_fleet_file), settings_with_meaning(tmp_path, True), db_path=db_path,
                    cache_dir=cache_dir)
    async with engine:
        assert engine.parts.meaning is not None and engine.parts.meaning._model is not None   # loaded at start
        answer = await engine.questions.ask(QUESTION)
    read = [c for c in answer.candidates if c.generation.answer.strip()]
    assert read and all(c.relevance is not None and 0.0 <= c.relevance <= 1.0 for c in read)
    judged = [k for c in read for k in c.checks if k.entailment is not None]
    assert judged and all(k.premise for k in judged)
    shown = answer_json(answer)["candidates"]
    assert all("relevance" in c and all("entailment" in k for k in c["checks"]) for c in shown)


async def test_with_meaning_off_nothing_is_read_for_meaning(small_fleet_file, db_path, cache_dir, tmp_path):
    engine = Engine(load_fleet(small_fleet_file), settings_with_meaning(tmp_path, False), db_path=db_path,
                    cache_dir=cache_dir)
    async with engine:
        assert engine.parts.meaning is None
        answer = await engine.questions.ask(QUESTION)
    assert all(c.relevance is None and all(k.entailment is None for k in c.checks) for c in answer.candidates)
