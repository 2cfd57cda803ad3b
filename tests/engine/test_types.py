import enum

import engine.types as types


def test_every_enum_member_is_distinct_and_hashes_apart():
    # A dataclass decorator on an enum makes all its members compare equal: never again.
    for value in vars(types).values():
        if isinstance(value, type) and issubclass(value, enum.Enum) and value is not enum.Enum:
            members = list(value)
            assert len({hash(m) for m in members}) == len(members), value
            assert all(a != b for i, a in enumerate(members) for b in members[i + 1:]), value
