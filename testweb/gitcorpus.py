"""Deterministic git repositories of real text, for the real application test.

:func:`make_repositories` writes bare repositories with ``git fast-import``
(one stream per repository: no working tree, no clock, no user config read),
so the same call makes the same commits, byte for byte, on every machine with
the same Debian packages. Their text is real prose: the paragraphs of
python-django-doc's HTML pages (:func:`paragraphs`; the package the real-web
test already needs), never the pages a test serves beside the repositories.

Each repository (see :data:`REPOSITORIES`) starts with a README and a few
files, then each commit edits one file (inserts, replaces or deletes a
paragraph) or adds one, with a message naming the change. Branches fork from
an earlier commit of ``master`` and carry commits of their own; tags mark a
few commits. Author and committer dates advance by a pseudo-random number of
hours from :data:`EPOCH`, long past, so the ages an application prints
("4 years") do not change from one run to the next.
"""

from __future__ import annotations

import random
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html

#: where the prose comes from (python-django-doc)
SOURCE = Path("/usr/share/doc/python-django-doc/html")
SOURCE_DIRECTORIES = ("topics", "ref", "howto", "intro", "internals", "misc", "faq")
#: 2021-01-04T00:00:00Z
EPOCH = 1609718400
AUTHORS = (("Ada Lindqvist", "ada@example.org"), ("Bruno Okafor", "bruno@example.org"),
           ("Chen Wei", "chen@example.org"), ("Dagny Haugen", "dagny@example.org"))
MIN_PARAGRAPH = 80  # characters: shorter <p> are captions and fragments
GIT_TIMEOUT = 120.0
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Branch:
    name: str
    fork_at: int  # index of the master commit it starts from
    commits: int


@dataclass(frozen=True)
class Repository:
    name: str
    description: str
    commits: int  # on master, the first included
    directories: tuple[str, ...]
    branches: tuple[Branch, ...] = ()
    tags: tuple[int, ...] = ()  # master commit indexes tagged v0.1, v0.2, ...


REPOSITORIES: tuple[Repository, ...] = (
    Repository("handbook", "The team handbook: how we build and run things", 120,
               ("guides", "reference", "howto"),
               (Branch("stable-1.x", 50, 15), Branch("draft/new-layout", 95, 8)), (20, 50, 90)),
    Repository("operations", "Runbooks and notes of the operations team", 70,
               ("runbooks", "notes"), (Branch("maintenance", 40, 10),), (35,)),
    Repository("tutorials", "Step-by-step tutorials", 45, ("basics", "advanced"), (), (30,)),
    Repository("website", "Texts of the public website", 30, ("pages",), (Branch("redesign", 20, 6),)),
)


class MissingCorpus(RuntimeError):
    """The package the prose comes from is not installed (the message says how to get it)."""


def paragraphs(source: Path = SOURCE) -> list[str]:
    """Every distinct paragraph of at least :data:`MIN_PARAGRAPH` characters
    of the HTML pages under ``source``'s :data:`SOURCE_DIRECTORIES`, in the
    order of their sorted paths."""
    files = sorted(path for directory in SOURCE_DIRECTORIES for path in (source / directory).rglob("*.html"))
    if not files:
        raise MissingCorpus(f"no HTML pages under {source}: python-django-doc is not installed "
                            "(`make test` installs it: apt-get install python-django-doc)")
    seen: dict[str, None] = {}
    for path in files:
        document = lxml.html.fromstring(path.read_bytes())
        for element in document.iter("p"):
            text = _SPACE.sub(" ", element.text_content()).strip()
            if len(text) >= MIN_PARAGRAPH:
                seen.setdefault(text, None)
    return list(seen)


@dataclass
class _History:
    """One repository's files as its stream is written."""

    rng: random.Random
    pool: list[str]
    directories: tuple[str, ...]
    files: dict[str, list[str]] = field(default_factory=dict)
    time: int = EPOCH
    drawn: int = 0

    def paragraph(self) -> str:
        text = self.pool[self.drawn % len(self.pool)]
        self.drawn += 1
        return text

    def wrap(self, text: str) -> str:
        lines, line = [], ""
        for word in text.split():
            if line and len(line) + len(word) >= 72:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        return "\n".join([*lines, line]) if line else ""

    def content(self, path: str) -> str:
        title = path.rsplit("/", 1)[-1].removesuffix(".txt").replace("-", " ").capitalize()
        body = "\n\n".join(self.wrap(p) for p in self.files[path])
        return f"{title}\n{'=' * len(title)}\n\n{body}\n"

    def new_file(self) -> tuple[str, str]:
        words = re.findall(r"[a-z]{4,}", self.paragraph().lower())[:3] or ["notes"]
        path = f"{self.rng.choice(self.directories)}/{'-'.join(words)}.txt"
        if path in self.files:
            path = path.replace(".txt", f"-{len(self.files)}.txt")
        self.files[path] = [self.paragraph() for _ in range(self.rng.randint(3, 7))]
        return path, f"Add {path}"

    def edit(self) -> tuple[str, str]:
        path = self.rng.choice(sorted(p for p in self.files if p != "README"))
        body = self.files[path]
        choice = self.rng.random()
        at = self.rng.randrange(len(body))
        if choice < 0.2 and len(body) > 2:
            del body[at]
            return path, f"{path}: drop a paragraph"
        if choice < 0.55:
            body[at] = self.paragraph()
            return path, f"{path}: rewrite paragraph {at + 1}"
        body.insert(at, self.paragraph())
        return path, f"{path}: add a paragraph"

    def change(self) -> tuple[str, str]:
        if self.rng.random() < 0.15 or len(self.files) < 4:
            return self.new_file()
        return self.edit()

    def tick(self) -> int:
        self.time += self.rng.randint(1, 30) * 3600
        return self.time


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n%s\n" % (len(raw), raw)


def _commit(history: _History, ref: str, mark: int, parent: int | None, path: str, subject: str) -> bytes:
    name, email = history.rng.choice(AUTHORS)
    when = history.tick()
    message = f"{subject}\n\n{history.wrap(history.paragraph())}\n"
    out = [f"commit {ref}\nmark :{mark}\n".encode(),
           f"author {name} <{email}> {when} +0000\ncommitter {name} <{email}> {when} +0000\n".encode(),
           _data(message)]
    if parent is not None:
        out.append(f"from :{parent}\n".encode())
    out.append(f"M 100644 inline {path}\n".encode())
    out.append(_data(history.content(path) if path != "README" else history.files["README"][0]))
    return b"".join(out)


def fast_import_stream(repository: Repository, pool: list[str]) -> bytes:
    """The ``git fast-import`` stream of ``repository``: master, then each branch, then the tags."""
    rng = random.Random(repository.name)
    start = rng.randrange(len(pool))
    history = _History(rng, pool[start:] + pool[:start], repository.directories)
    history.files["README"] = [f"{repository.name}\n\n{repository.description}.\n"]
    stream, mark, master, states = [], 0, [], []
    for index in range(repository.commits):
        path, subject = ("README", "Initial commit") if index == 0 else history.change()
        mark += 1
        stream.append(_commit(history, "refs/heads/master", mark, master[-1] if master else None, path, subject))
        master.append(mark)
        states.append({name: list(body) for name, body in history.files.items()})
    for branch in repository.branches:
        history.files = {name: list(body) for name, body in states[branch.fork_at].items()}
        parent = master[branch.fork_at]
        for _ in range(branch.commits):
            path, subject = history.change()
            mark += 1
            stream.append(_commit(history, f"refs/heads/{branch.name}", mark, parent, path, subject))
            parent = mark
    for number, index in enumerate(repository.tags, start=1):
        stream.append(f"reset refs/tags/v0.{number}\nfrom :{master[index]}\n\n".encode())
    return b"".join(stream)


def make_repositories(directory: Path, repositories: tuple[Repository, ...] = REPOSITORIES,
                      source: Path = SOURCE) -> dict[str, Path]:
    """Bare repositories ``directory/<name>.git``, by name."""
    pool = paragraphs(source)
    made = {}
    for repository in repositories:
        path = Path(directory) / f"{repository.name}.git"
        subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=master", str(path)],
                       check=True, timeout=GIT_TIMEOUT, env=_git_env())
        subprocess.run(["git", "fast-import", "--quiet", "--done"], cwd=path, check=True, timeout=GIT_TIMEOUT,
                       input=fast_import_stream(repository, pool) + b"done\n", env=_git_env())
        (path / "description").write_text(repository.description + "\n")
        made[repository.name] = path
    return made


def _git_env() -> dict[str, str]:
    """No user or system configuration: the same repositories everywhere."""
    return {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
            "HOME": "/nonexistent", "LC_ALL": "C"}
