"""Bisection finds every poison item, writes every good one, retries nothing transient."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from turngraph.schemas.errors import BackendUnavailableError, PermanentError
from turngraph.workers.ingest.isolation import is_transient, run_isolating


class Store:
    def __init__(self, poison: set[int]) -> None:
        self.poison = poison
        self.written: list[int] = []
        self.calls = 0

    def write(self, items: Sequence[int]) -> int:
        self.calls += 1
        if self.poison & set(items):
            raise ValueError("cannot write")  # all or nothing, like one transaction
        self.written.extend(items)
        return len(items)


@given(
    size=st.integers(min_value=1, max_value=120),
    poison=st.sets(st.integers(min_value=0, max_value=119), max_size=5),
)
def test_every_good_item_is_written_once_and_every_poison_is_reported_once(
    size: int, poison: set[int]
) -> None:
    poison = {p for p in poison if p < size}
    store = Store(poison)
    out = run_isolating(store.write, list(range(size)))
    assert sorted(store.written) == [i for i in range(size) if i not in poison]
    assert sorted(item for item, _ in out.poisoned) == sorted(poison)
    assert sum(out.results) == size - len(poison)
    assert all(isinstance(exc, ValueError) for _, exc in out.poisoned)
    if not poison:
        assert store.calls == 1
    else:  # about 2 log2(size) calls per poison item
        assert store.calls <= 1 + len(poison) * 2 * (size.bit_length() + 1)


@pytest.mark.parametrize(
    "exc",
    [BackendUnavailableError("graph away"), redis.ConnectionError("gone")],
)
def test_a_transient_failure_is_not_bisected(exc: Exception) -> None:
    calls: list[int] = []

    def write(items: Sequence[int]) -> int:
        calls.append(len(items))
        raise exc

    with pytest.raises(type(exc)):
        run_isolating(write, list(range(10)))
    assert calls == [10]
    assert is_transient(exc) and not is_transient(PermanentError("x"))
    assert not is_transient(ValueError("unknown: a property of the turns"))
