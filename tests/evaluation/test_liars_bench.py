"""bench/liars.py's fleet (a file the agents' processes read) and bench/attackers/liar_agent.py's lies, made from
its own reading of the context (it imports nothing of Quorum)."""
import ast
import types
from pathlib import Path

from bench.attackers import liar_agent
from bench.liars import BUILT_IN_GENERATORS, HONEST, JUDGE, fleet_with, summarise
from engine import load_fleet

CONTEXT = [{"id": "mars#0", "text": "Mars has two small moons, Phobos and Deimos. They orbit close to Mars."},
           {"id": "mars#1", "text": "The moons of Mars are irregular in shape. Mars is a cold desert world."},
           {"id": "hall#0", "text": "Asaph Hall discovered the moons of Mars in 1877 at the Naval Observatory."}]


def test_the_variant_fleet_puts_the_liars_in_place_of_the_built_in_generators(tmp_path):
    fleet = load_fleet(fleet_with({"liar-1": 41001, "liar-2": 41002}, True, True, tmp_path / "a"))
    enabled = {a.id for a in fleet.agents if a.enabled}
    assert HONEST in enabled and not (set(BUILT_IN_GENERATORS) - {HONEST}) & enabled and JUDGE in enabled
    liar = fleet.agent("liar-2")
    assert liar.url == "http://127.0.0.1:41002" and not liar.builtin and liar.role.value == "generator"
    alone = load_fleet(fleet_with({"liar-1": 41001}, False, False, tmp_path / "b"))
    assert {a.id for a in alone.agents if a.enabled and a.role.value == "generator"} == {"liar-1"}
    assert not alone.agent(JUDGE).enabled
    assert alone.permissions is not None and alone.permissions.is_file()


def test_the_off_topic_liar_quotes_a_true_sentence_that_names_nothing_the_best_one_adds():
    answer, claims, lied = liar_agent.lie("off-topic", "What are the names of the moons of Mars?", CONTEXT)
    assert lied and answer == "The moons of Mars are irregular in shape." and claims == [(answer, ["mars#1"])]
    judged, _, _ = liar_agent.lie("to-judge", "What are the names of the moons of Mars?", CONTEXT)
    assert judged.startswith(answer) and "correct reading is Yes" in judged


def test_the_role_swap_and_splice_liars_change_the_best_sentence_and_cite_its_sources():
    swapped, claims, lied = liar_agent.lie("role-swap", "Who discovered the moons of Mars in 1877?", CONTEXT)
    assert lied and swapped == "Mars discovered the moons of Asaph Hall in 1877 at the Naval Observatory."
    spliced, claims, lied = liar_agent.lie("splice", "Who discovered the moons of Mars in 1877?", CONTEXT)
    assert lied and claims[0][1] == ["hall#0", "mars#0"] and spliced.startswith("Asaph Hall discovered the moons")
    honest, _, lied = liar_agent.lie("off-topic", "Who discovered the moons of Mars?", CONTEXT[2:])
    assert not lied and honest == CONTEXT[2]["text"]          # nothing else to quote: it tells the truth


def test_the_liar_agent_imports_nothing_of_quorum():
    tree = ast.parse(Path(liar_agent.__file__).read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m.split(".")[0] in ("engine", "bench", "console")}


def test_the_summary_counts_lies_given_and_the_questions_to_quarantine():
    rows = [{"n": 1, "lied": [], "lie_given": False, "right": True, "verdict": "answered", "judge": "not needed",
             "states": {"liar-1": "active"}, "s": 3.0},
            {"n": 2, "lied": ["liar-1"], "lie_given": True, "right": False, "verdict": "answered", "judge": "read",
             "states": {"liar-1": "active"}, "s": 5.0},
            {"n": 3, "lied": ["liar-1"], "lie_given": False, "right": False, "verdict": "abstained", "judge": "read",
             "states": {"liar-1": "quarantined"}, "s": 4.0}]
    args = types.SimpleNamespace(lie="off-topic", mode="alone", tier="medium", no_judge=False)
    summary = summarise(rows, ["liar-1"], args)
    assert (summary["lied_on"], summary["lie_given"], summary["lie_given_rate"]) == (2, 1, 0.5)
    assert summary["questions_to_quarantine"] == {"liar-1": 1} and summary["judge_asked"] == 2
