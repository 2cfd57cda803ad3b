"""The exit codes of every command (`main.py`, the engine's commands and the bench's): one table.

Every error is said in one line, `error: …`, on stderr; the code says what kind it was.
"""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    # Something went wrong that the input does not explain: a broken audit chain, an agent or model that
    # fails, an evaluation's defence that raised, a fault run that crashed or leaked.
    FAILURE = 1
    # Bad input: a bad argument, an unknown id, a missing or malformed file, a broken config file (the message
    # names it).
    BAD_INPUT = 2
    # `agents check`: the agent answered, and some of the protocol's conformance cases fail. The same number as
    # FAILURE (an alias in this enum): scripts have always read 1 as "not conformant".
    FAILED_CASES = 1
