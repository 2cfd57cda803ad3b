"""The engine is free of Qt, the console sees only the engine's public API, the engine has no import cycle:
the import-linter contracts in pyproject.toml hold, and each of them fails when its rule is broken."""
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINTER = Path(sys.executable).parent / "lint-imports"
PACKAGES = ("engine", "console", "bench")

# One import per contract that breaks it: (file to append it to, the import line, the contract's name).
BREAKERS = {
    "qt in the engine": ("engine/text.py", "import PySide6.QtCore", "The engine never imports Qt"),
    "console below the engine": ("engine/errors.py", "import console.style", "Console sits above engine"),
    "console reaches behind the door": ("console/notify.py", "from engine.store import db",
                                        "The console imports only the engine's public API"),
    "an engine cycle": ("engine/store/db.py", "from engine.gateway import traces", "The engine has no import cycles"),
    "an import up the layers": ("engine/ids.py", "import engine.demo", "The engine stands in layers"),
    "the product reaches into the bench": ("engine/text.py", "import bench.perf.measure",
                                           "The product never imports the bench"),
    # Indirectly too: the lie builder imports the honest generator, which reads sentences as the verifier does.
    "a lie built with the defence's rule": ("bench/evaluation/lies.py", "import engine.agents.extractive",
                                            "The builders of lies and attacks import none of the defences"),
    "a lie built with the defence's reading of text": ("bench/evaluation/lie_text.py", "import engine.text",
                                                       "The bench's attack builders read text with their own helpers"),
}


def contracts() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINTER), "--no-cache"], cwd=root, capture_output=True, text=True)


def test_importing_engine_loads_no_qt_and_no_torch():
    code = ("import sys, engine, engine.pipeline, engine.agents.launcher, engine.store.db;"
            "bad = [m for m in ('PySide6', 'qasync', 'pyqtgraph', 'torch', 'sentence_transformers') if m in sys.modules];"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_linter_contracts_hold():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in contracts():
        assert f"{name} KEPT" in out.stdout, out.stdout


def test_every_contract_has_a_breaker_that_shows_it_can_fail():
    assert sorted(contracts()) == sorted(name for _, _, name in BREAKERS.values())


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The project's packages and contracts, copied: a breaker edits the copy, never the checkout."""
    root = tmp_path_factory.mktemp("contracts")
    for package in PACKAGES:
        if (ROOT / package / "__init__.py").exists():
            shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize("case", sorted(BREAKERS))
def test_a_contract_fails_when_its_rule_is_broken(tree: Path, case: str):
    path, line, name = BREAKERS[case]
    target = tree / path
    kept = target.read_text()
    target.write_text(kept + f"\n{line}  # noqa: E402,F401\n")
    try:
        out = lint(tree)
    finally:
        target.write_text(kept)
    assert out.returncode != 0
    assert f"{name} BROKEN" in out.stdout, out.stdout
    broken = [c for c in contracts() if f"{c} BROKEN" in out.stdout]
    assert broken and set(broken) <= {name} | ACCEPTED_ALSO.get(case, set()), out.stdout


# A breaker may break more than its own contract where the rules overlap (a cycle also breaks the layers).
ACCEPTED_ALSO: dict[str, set[str]] = {
    "an engine cycle": {"The engine stands in layers"},
    # engine.errors → console → engine: the ground reaches the top through the console, and console is forbidden
    # ... and the lie builders' engine.types now reaches engine.verify through the console.
    "console below the engine": {"The engine never imports Qt", "The engine stands in layers",
                                 "The builders of lies and attacks import none of the defences",
                                 "The bench's attack builders read text with their own helpers"},
    # The honest generator reads sentences with engine.text: the defence's rule and its reading of text at once.
    "a lie built with the defence's rule": {"The bench's attack builders read text with their own helpers"},
}
