"""The fixed dev/test split of every evaluation set: by a hash of the question id, never by position.

Thresholds are tuned on `dev` only; `test` is reported beside it and never looked at while tuning.
The split is a pure function of the id, so adding or removing questions never moves another
question from one side to the other.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Iterable, TypeVar

DEV, TEST = "dev", "test"
SPLITS = (DEV, TEST)
T = TypeVar("T")


def split_of(question_id: str) -> str:
    """`dev` when the first byte of sha256(id) is even, else `test` (about half each)."""
    return DEV if hashlib.sha256(question_id.encode("utf-8")).digest()[0] % 2 == 0 else TEST


def by_split(items: Iterable[T], key: Callable[[T], str]) -> dict[str, list[T]]:
    """{"dev": [...], "test": [...]} in the items' own order."""
    out: dict[str, list[T]] = {DEV: [], TEST: []}
    for item in items:
        out[split_of(key(item))].append(item)
    return out
