"""The engine is free of Qt, and the console sits above it."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_engine_loads_no_qt_and_no_torch():
    code = ("import sys, engine, engine.pipeline, engine.agents.launcher, engine.store.db;"
            "bad = [m for m in ('PySide6', 'qasync', 'pyqtgraph', 'torch', 'sentence_transformers') if m in sys.modules];"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_linter_contracts_hold():
    linter = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 kept, 0 broken" in out.stdout
