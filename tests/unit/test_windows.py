"""RecentSet: the last ``keep`` members, each forgotten once older than asked; a plain set to whoever holds it."""

from __future__ import annotations

import pytest

from inferbus.runtime.windows import RecentSet


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_keeps_the_newest_members_up_to_its_cap():
    seen = RecentSet(["a", "b"], keep=3)
    seen.update(["c", "d"], ["e"])
    assert seen == {"c", "d", "e"} and isinstance(seen, set)
    seen.add("c")  # added again: now the newest, so "d" is the oldest
    seen.add("f")
    assert seen == {"e", "c", "f"}


def test_forgets_what_was_added_before_a_moment_oldest_first():
    clock = Clock()
    seen = RecentSet(keep=100, clock=clock)
    for at, member in [(1.0, "a"), (2.0, "b"), (3.0, "c")]:
        clock.now = at
        seen.add(member)
    assert seen.forget_before(2.5) == 2 and seen == {"c"}
    assert seen.forget_before(2.5) == 0
    clock.now = 4.0
    seen.add("a")
    seen.discard("c")
    assert seen == {"a"} and seen.forget_before(3.5) == 0 and seen.forget_before(4.5) == 1 and not seen


def test_a_window_must_hold_something():
    with pytest.raises(ValueError, match="keep must be at least 1"):
        RecentSet(keep=0)
