"""An answer's citations carry their chunk's `kind` and `section`, so the console can set a passage out as its
document had it."""
from __future__ import annotations

from engine import Engine, RiskTier, load_fleet, load_settings

from ..conftest import FAST_SETTINGS, write_fleet

GUIDE = """# Quorum

## Install

Quorum is an operations console for a fleet of retrieval agents that may lie.

```sh
pip install quorum
```
"""


async def test_citations_name_the_section_and_kind_of_their_passage(tmp_path, db_path, cache_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GUIDE)
    (docs / "other.md").write_text("BM25 is a ranking function used by search engines to score documents.\n")
    fleet = load_fleet(write_fleet(tmp_path, corpus=docs))
    async with Engine(fleet, load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir) as engine:
        answer = await engine.ask("What is Quorum, the operations console?", RiskTier.MEDIUM)
    cited = {c.chunk_id: c for c in answer.citations}
    assert "guide#install-0" in cited, answer.reason
    assert (cited["guide#install-0"].kind, cited["guide#install-0"].section) == ("prose", "Quorum › Install")
