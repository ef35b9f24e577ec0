"""The real-application test's git repositories (:mod:`testweb.gitcorpus`):
the same commits on every run, of the shape the test relies on."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testweb.gitcorpus import REPOSITORIES, make_repositories


def git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repository, check=True, capture_output=True, text=True,
                          timeout=60).stdout


def test_two_runs_make_the_same_commits_with_the_described_history(tmp_path: Path) -> None:
    first = make_repositories(tmp_path / "one")
    second = make_repositories(tmp_path / "two")
    assert sorted(first) == sorted(r.name for r in REPOSITORIES)
    for spec in REPOSITORIES:
        refs = git(first[spec.name], "for-each-ref", "--format=%(refname) %(objectname)")
        assert refs == git(second[spec.name], "for-each-ref", "--format=%(refname) %(objectname)")
        assert int(git(first[spec.name], "rev-list", "--count", "master")) == spec.commits
        for branch in spec.branches:
            assert int(git(first[spec.name], "rev-list", "--count", f"master..{branch.name}")) == branch.commits
        assert git(first[spec.name], "tag").split() == [f"v0.{n}" for n in range(1, len(spec.tags) + 1)]
    # files change from commit to commit: most commits touch a file that existed before
    log = git(first["handbook"], "log", "--format=%s", "master")
    assert sum(": " in subject for subject in log.splitlines()) > 80
    assert len(set(log.splitlines())) > 60  # the messages differ
