"""A copy of config/fleet.toml with some agents changed, for the evaluations that run the real fleet
(bench/liars.py, bench/llm_live.py): the agents' processes read the fleet file themselves, so a variant is a file,
not only a FleetConfig. Its relative paths (permissions, corpus, texts) reach the project's through links beside
it."""
from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]

Edit = Callable[[str, str], str]          # (agent id, its block of the fleet file) -> the block to write


def variant_fleet(workdir: Path, edit: Edit, extra: Sequence[str] = ()) -> Path:
    """config/fleet.toml in workdir/config with each [[agents]] block passed through `edit`, then `extra` blocks
    (the lines after an `[[agents]]` header) added."""
    folder = workdir / "config"
    folder.mkdir(parents=True)
    (folder / "permissions.toml").symlink_to(ROOT / "config" / "permissions.toml")
    (workdir / "resources").symlink_to(ROOT / "resources")
    head, *blocks = (ROOT / "config" / "fleet.toml").read_text().split("[[agents]]")
    out = [head] + [edit(re.search(r'^id = "([^"]+)"', b, re.M).group(1), b) for b in blocks] + list(extra)
    path = folder / "fleet.toml"
    path.write_text("[[agents]]".join(out))
    return path


def with_keys(block: str, **keys: str) -> str:
    """The block with these keys (TOML values, as written) in place of its own, right after its header."""
    for key in keys:
        block = re.sub(rf"^{key} = .*\n", "", block, flags=re.M)
    return block.replace("\n", "\n" + "".join(f"{k} = {v}\n" for k, v in keys.items()), 1)


def holds_gold(text: str, gold: Sequence[str]) -> bool:
    return any(g.lower() in text.lower() for g in gold)


async def judges_checked(engine, wait_s: float) -> None:
    """Waits until no judge is answering its canaries (or wait_s passed): the first questions would otherwise be
    decided without it, which is the product's behaviour at start but not what an evaluation measures."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if all(a.canaries is not None and a.canaries.value != "pending"
               for a in engine.fleet.agents() if a.spec.judge and a.spec.enabled):
            return
        await asyncio.sleep(0.5)
