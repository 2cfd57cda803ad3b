"""The two corpora of `eval documents`, written as folders an operator could point `--corpus` at.

- packages: the README (long description) of every installed distribution that ships one in Markdown, one file
  each, as published: HTML, badges, code, tables and all. Its question is "What is <name> for?" and its gold
  answer the one-line Summary, which the README never has to repeat word for word.
- hotpotqa: the paragraphs of the HotpotQA sample, one plain-text file per title (its title in front matter),
  every question's paragraphs in one folder: each question's gold paragraphs among those of all the others.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Iterable, Sequence

from .generation import Question

OWN_DISTRIBUTION = "quorum"      # this project's README describes the engine under test: left out
MIN_README_CHARS = 200


@dataclass(frozen=True)
class PackageDoc:
    name: str
    summary: str
    readme: str

    @property
    def question(self) -> str:
        return f"What is {self.name} for?"

    @property
    def file_name(self) -> str:
        return f"{_slug(self.name)}.md"


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80] or "untitled"
    return slug


def _readme(dist: metadata.Distribution) -> str:
    meta = dist.metadata
    body = meta.get_payload() if hasattr(meta, "get_payload") else ""
    return (body or meta.get("Description") or "").strip()


def installed_packages(distributions: Iterable[metadata.Distribution] | None = None) -> list[PackageDoc]:
    """Distributions with a one-line Summary and a Markdown README of some length, by name, each name once."""
    found: dict[str, PackageDoc] = {}
    for dist in distributions if distributions is not None else metadata.distributions():
        meta = dist.metadata
        name, summary = (meta.get("Name") or "").strip(), (meta.get("Summary") or "").strip()
        if not name or not summary or name.lower() == OWN_DISTRIBUTION:
            continue
        if "markdown" not in (meta.get("Description-Content-Type") or "").lower():
            continue
        readme = _readme(dist)
        if len(readme) >= MIN_README_CHARS:
            found.setdefault(name.lower(), PackageDoc(name, summary, readme))
    return sorted(found.values(), key=lambda p: p.name.lower())


def write_packages(folder: Path, packages: Sequence[PackageDoc]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for package in packages:
        (folder / package.file_name).write_text(package.readme + "\n", encoding="utf-8")


def hotpot_file_name(title: str) -> str:
    """One file per title; titles that differ only in characters a file name drops get a short hash."""
    digest = hashlib.sha256(title.encode("utf-8")).hexdigest()[:8]
    return f"{_slug(title)}-{digest}.txt"


def write_hotpot(folder: Path, questions: Sequence[Question]) -> int:
    """Every paragraph of every question, one file per title (the first text seen for a title); returns the
    number of files."""
    folder.mkdir(parents=True, exist_ok=True)
    written: set[str] = set()
    for question in questions:
        for passage in question.passages:
            if passage.title in written:
                continue
            written.add(passage.title)
            title = " ".join(passage.title.split())
            (folder / hotpot_file_name(passage.title)).write_text(
                f"---\ntitle: {title}\nsource: HotpotQA (Wikipedia)\n---\n{passage.text}\n", encoding="utf-8")
    return len(written)
