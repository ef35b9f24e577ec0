"""The conformance vectors live in the repository (tests/data/conformance),
each with its source and licence, and nothing reads data from outside it."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.conformance import DATA, vectors

ROOT = Path(__file__).resolve().parent.parent


def listed_checksums() -> dict[str, str]:
    """file name -> SHA-256, from the checksum block of SOURCE.md."""
    text = (DATA / "SOURCE.md").read_text(encoding="utf-8")
    return {name: digest for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", text, re.M)}


def test_every_vector_file_is_listed_with_its_checksum_and_licence() -> None:
    listed = listed_checksums()
    assert sorted(listed) == sorted(path.name for path in DATA.glob("*.json"))
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name
    source = (DATA / "SOURCE.md").read_text(encoding="utf-8")
    licences = sorted(path.name for path in (DATA / "licenses").iterdir())
    assert len(licences) == 5
    for licence in licences:
        assert f"`{licence}`" in source, f"{licence} is not named in SOURCE.md"


def test_the_case_counts_are_those_of_the_sources() -> None:
    assert len(vectors("robots_google.json")) == 145
    assert len(vectors("robots_extra.json")) == 426
    assert len(vectors("url_resolution.json")) == 482
    assert len(vectors("rfc3986_examples.json")) == 42
    w3lib = vectors("url_normalization_w3lib.json")
    assert (len(w3lib["canonicalize_url"]), len(w3lib["safe_url_string"])) == (64, 215)


def test_a_missing_vector_file_fails_the_test_instead_of_skipping_it() -> None:
    with pytest.raises(pytest.fail.Exception, match="conformance vectors missing"):
        vectors("no_such_vectors.json")


def test_no_test_bench_or_script_reads_outside_the_repository() -> None:
    """No machine path and no sibling directory in the code that runs."""
    pattern = re.compile(r"/work/|\.\./shared|shared/conformance|parent\.parent\.parent")
    offenders = []
    for folder in ("tests", "bench", "testweb", "crawler", "extensions"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
