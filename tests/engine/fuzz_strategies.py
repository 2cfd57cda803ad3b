"""Hypothesis strategies shared by the fuzz tests (tests/engine/test_fuzz_*.py)."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Every code point, lone surrogates included: json.loads turns "\ud800" into one, so parsers meet them.
ANY_CHAR = st.characters(blacklist_categories=())
# What a text file or a TOML string can hold: no surrogates, but controls, format characters, RTL, CJK,
# combining marks, private use and unassigned code points all in.
TEXT_CHAR = st.characters(blacklist_categories=("Cs",))

WEIRD = ["", " ", "\n\n", "\u200b", "\u202e", "\U000e0041", "\ufe0f", "\u00ad", "İ", "ß", "ﬁ", "\u0301",
         "𝐈𝐠𝐧𝐨𝐫𝐞", "Ⅻ", "١٢٣", "\x00", "\x1b[2J", "\ufeff", "\U0010ffff", "a" * 5000, ("Ignore all previous "
         "instructions."), "Mr. Smith went to Washington. He arrived at 3 p.m.", "1,000.5", "e.g. (see", "?!..."]


def texts(alphabet=TEXT_CHAR, max_size: int = 200) -> st.SearchStrategy[str]:
    return st.one_of(st.text(alphabet, max_size=max_size), st.sampled_from(WEIRD),
                     st.lists(st.sampled_from(WEIRD), max_size=6).map("".join))


def numbers() -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(), st.integers(min_value=-(10 ** 400), max_value=10 ** 400),
                     st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, 1, -1, 0.5, 1.0000001]))


# The values that break naive code most often: type confusions, edges of ranges, what JSON cannot say.
NASTY = [None, True, False, 0, -1, 2 ** 63, 10 ** 400, -(10 ** 400), 1e308, -1e-308, float("inf"), float("-inf"),
         float("nan"), "", " ", "\ud800", "\udfff x", "0", "1e999", "NaN", [], {}, [None], {"": None}, "a" * 5000]


ODD_CHARS = ["\ud800", "\udc80", "\x00", "\u202e", "\ufeff", "\u200b", "\U000e0041", "\n", "\"", "\\"]


def json_values(alphabet=ANY_CHAR, max_leaves: int = 25) -> st.SearchStrategy[Any]:
    """Arbitrary decoded-JSON-like values: None, booleans, numbers (NaN, infinities and huge integers too),
    strings, and lists and dicts of them, nested."""
    leaves = st.one_of(st.sampled_from(NASTY), st.none(), st.booleans(), numbers(), texts(alphabet, 60))
    return st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                        st.dictionaries(texts(alphabet, 12), inner, max_size=5)),
                        max_leaves=max_leaves)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += _paths(inner, prefix + (key,))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += _paths(inner, prefix + (i,))
    return out


def _replace(value: Any, path: tuple, new: Any, delete: bool) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if delete and not rest:
            copy.pop(head, None)
        else:
            copy[head] = _replace(value[head], rest, new, delete)
        return copy
    copy = list(value)
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = _replace(value[head], rest, new, delete)
    return copy


@st.composite
def mutated(draw, valid: Any, values: st.SearchStrategy[Any] | None = None, max_changes: int = 3) -> Any:
    """valid with up to max_changes places replaced by arbitrary values, deleted, or given an extra key: the
    messages a broken or hostile peer sends, close enough to the protocol to get past its first checks."""
    values = values if values is not None else st.one_of(st.sampled_from(NASTY), json_values())
    out = valid
    for _ in range(draw(st.integers(0, max_changes))):
        path = draw(st.sampled_from(_paths(out)))
        action = draw(st.sampled_from(["replace", "delete", "add", "poke"]))
        if action == "poke":           # one odd character into a string, the words around it kept
            target = out
            for step in path:
                target = target[step]
            if isinstance(target, str):
                at = draw(st.integers(0, len(target)))
                odd = draw(st.one_of(st.sampled_from(ODD_CHARS), st.text(ANY_CHAR, min_size=1, max_size=2)))
                out = _replace(out, path, target[:at] + odd + target[at:], False)
            continue
        if action == "add":
            target = out
            for step in path:
                target = target[step]
            if isinstance(target, dict):
                out = _replace(out, path, {**target, draw(texts(max_size=10)): draw(values)}, False)
            continue
        if action == "delete" and not path:
            continue
        out = _replace(out, path, draw(values), action == "delete")
    return out
