"""WriteAhead: one commit per reactor turn however many requests ask, at once without a reactor."""

from __future__ import annotations

from typing import Any

from extensions.frontier.scheduler import WriteAhead


def test_without_call_soon_every_request_commits_at_once() -> None:
    commits: list[int] = []
    write_ahead = WriteAhead(lambda: commits.append(1), None)
    write_ahead.request()
    write_ahead.request()
    assert commits == [1, 1]


def test_requests_of_one_turn_share_one_commit_at_the_turn_end() -> None:
    commits: list[int] = []
    soon: list[Any] = []
    write_ahead = WriteAhead(lambda: commits.append(1), soon.append)
    for _ in range(5):
        write_ahead.request()
    assert commits == [] and len(soon) == 1
    soon.pop()()
    assert commits == [1]
    write_ahead.request()  # the next turn gets its own
    assert len(soon) == 1
    soon.pop()()
    assert commits == [1, 1]


def test_cancelled_commit_is_dropped_and_a_later_request_schedules_again() -> None:
    commits: list[int] = []
    soon: list[Any] = []
    write_ahead = WriteAhead(lambda: commits.append(1), soon.append)
    write_ahead.request()
    write_ahead.cancel()  # the store closes (and commits itself)
    soon.pop()()
    assert commits == []
    write_ahead.request()
    soon.pop()()
    assert commits == [1]
