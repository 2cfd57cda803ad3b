"""The tool stage: comparisons the hops' findings need (which came first, which is larger, the same or
not), computed rather than generated."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..text import content_words, numbers

_EARLIER = re.compile(r"\b(first|earlier|older|oldest|before|sooner)\b", re.I)
_LATER = re.compile(r"\b(later|younger|youngest|after|last|more recent)\b", re.I)
_LARGER = re.compile(r"\b(more|larger|largest|bigger|higher|taller|longer|greater|most)\b", re.I)
_SMALLER = re.compile(r"\b(fewer|less|smaller|lower|shorter|least)\b", re.I)
_SAME = re.compile(r"\b(same|both|either)\b", re.I)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


@dataclass(frozen=True)
class ToolResult:
    output: str
    used: str            # "date comparison", "number comparison", "same-value check" or "" (nothing to compute)
    sentence: str = ""   # the result as one plain sentence, for the synthesis stage's context


def compare(question: str, findings: Sequence[tuple[str, str]]) -> ToolResult:
    """findings: (entity, the sentence found about it) per hop."""
    if len(findings) < 2:
        return ToolResult("", "")
    if _EARLIER.search(question) or _LATER.search(question):
        years = [(min(map(int, _YEAR.findall(text))), entity) for entity, text in findings if _YEAR.findall(text)]
        if len(years) == len(findings):
            pick = min(years) if _EARLIER.search(question) else max(years)
            listed = ", ".join(f"{e} {y}" for y, e in years)
            which = "first" if _EARLIER.search(question) else "last"
            said = ", ".join(f"{e} in {y}" for y, e in years)
            return ToolResult(f"{pick[1]} ({listed})", "date comparison",
                              f"By the dates found, {pick[1]} came {which}: {said}.")
    if _LARGER.search(question) or _SMALLER.search(question):
        values = []
        for entity, text in findings:
            found = [float(n) for n in numbers(text) if not _YEAR.fullmatch(n)]
            if found:
                values.append((max(found), entity))
        if len(values) == len(findings):
            pick = max(values) if _LARGER.search(question) else min(values)
            listed = ", ".join(f"{e} {v:g}" for v, e in values)
            which = "larger" if _LARGER.search(question) else "smaller"
            return ToolResult(f"{pick[1]} ({listed})", "number comparison",
                              f"By the figures found, {pick[1]} has the {which} value: {listed}.")
    if _SAME.search(question):
        asked = set(content_words(question))
        sets = [set(content_words(text)) - asked - set(content_words(entity)) for entity, text in findings]
        shared = set.intersection(*sets) if sets else set()
        verdict = "yes" if shared else "no"
        detail = f"both say: {', '.join(sorted(shared)[:4])}" if shared else "nothing they say in common"
        names = " and ".join(entity for entity, _ in findings)
        said = (f"The findings for {names} share: {', '.join(sorted(shared)[:4])}." if shared else
                f"The findings for {names} have nothing in common.")
        return ToolResult(f"{verdict} ({detail})", "same-value check", said)
    return ToolResult("", "")
