"""docs/math.md and the code cannot drift apart.

- Every ``docs/math.md §N`` citation in the repository's Python and Markdown files names a
  section heading of docs/math.md (ranges such as ``§2-§3`` name every section in between).
- Every oracle value of docs/math.md §3, §4, §6, §7 and §8 (a number or fraction written in
  backticks) occurs as a numeric literal (or a literal quotient ``a / b``) in the test suite.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MATH = ROOT / "docs" / "math.md"
THIS = Path(__file__).resolve()

#: Sections whose backticked numbers are oracle values that tests must pin.
ORACLE_SECTIONS = ("3", "4", "6", "7", "8")
#: Directories never scanned (environments, caches, build trees).
SKIPPED_DIRS = {"build", "dist", "node_modules", "__pycache__"}

SECTION_REF = r"§\d+(?:\.\d+)*"
CITATION = re.compile(
    r"docs/math\.md`{0,2}(\s*"
    + SECTION_REF
    + r"(?:\s*(?:,|-|–|/|and|to)?\s*"
    + SECTION_REF
    + r")*)"
)
RANGE = re.compile(r"§(\d+)\s*[-–]\s*§(\d+)")
HEADING = re.compile(r"^#{2,6} §(\d+(?:\.\d+)*)\s", re.MULTILINE)
TOP_HEADING = re.compile(r"^## §(\d+)\s", re.MULTILINE)
ORACLE = re.compile(r"`(-?\d+(?:\.\d+)?(?:e-?\d+)?|\d+/\d+)`")


# --- parsing helpers ---------------------------------------------------------------------------


def cited_sections(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, section)`` for every section a ``docs/math.md §...`` citation names."""
    for match in CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        group = match.group(1)
        for lo, hi in RANGE.findall(group):
            for number in range(int(lo), int(hi) + 1):
                yield line, str(number)
        for ref in re.findall(SECTION_REF, group):
            yield line, ref[1:]


def section_headings(text: str) -> set[str]:
    """The section numbers of docs/math.md's headings (``§1``, ``§1.1``, ...)."""
    return set(HEADING.findall(text))


def top_level_sections(text: str) -> dict[str, str]:
    """``{number: body}`` of the ``## §N`` sections of docs/math.md."""
    matches = list(TOP_HEADING.finditer(text))
    bodies = {}
    for here, after in zip(matches, [*matches[1:], None], strict=True):
        end = after.start() if after is not None else len(text)
        bodies[here.group(1)] = text[here.end() : end]
    return bodies


def oracle_values(body: str) -> list[tuple[str, float]]:
    """The backticked numbers and fractions of a section, as ``(spelling, value)``."""
    values = []
    for literal in ORACLE.findall(body):
        if "/" in literal:
            num, den = literal.split("/")
            values.append((literal, int(num) / int(den)))
        else:
            values.append((literal, float(literal)))
    return values


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def numeric_literals(source: str) -> set[float]:
    """Numeric constants of a Python source, plus the quotients ``a / b`` of two of them."""
    found: set[float] = set()
    for node in ast.walk(ast.parse(source)):
        value = _number(node) if isinstance(node, ast.Constant | ast.UnaryOp) else None
        if value is not None:
            found.add(value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            num, den = _number(node.left), _number(node.right)
            if num is not None and den:
                found.add(num / den)
    return found


def is_pinned(value: float, literals: set[float]) -> bool:
    """Whether ``value`` equals one of ``literals`` (to 1e-12 relative, for quotients)."""
    return value in literals or any(
        math.isclose(value, lit, rel_tol=1e-12, abs_tol=0.0) for lit in literals
    )


def repository_files(suffixes: tuple[str, ...]) -> Iterator[Path]:
    """The repository's files with these suffixes (hidden, build and egg-info dirs skipped)."""
    for directory, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and d not in SKIPPED_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(files):
            if name.endswith(suffixes):
                yield Path(directory) / name


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def math_text() -> str:
    return MATH.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def test_literals() -> set[float]:
    literals: set[float] = set()
    for path in repository_files((".py",)):
        if path.resolve() == THIS or "tests" not in path.relative_to(ROOT).parts[:1]:
            continue
        literals |= numeric_literals(path.read_text(encoding="utf-8"))
    return literals


# --- the document's structure -----------------------------------------------------------------


def test_sections_are_numbered_zero_to_ten(math_text: str) -> None:
    assert list(top_level_sections(math_text)) == [str(n) for n in range(11)]
    assert "1.1" in section_headings(math_text)


# --- citations --------------------------------------------------------------------------------


def test_every_citation_names_a_section(math_text: str) -> None:
    headings = section_headings(math_text)
    citations, missing = 0, []
    for path in repository_files((".py", ".md")):
        text = path.read_text(encoding="utf-8")
        for line, section in cited_sections(text):
            citations += 1
            if section not in headings:
                missing.append(f"{path.relative_to(ROOT)}:{line}: §{section}")
    assert citations > 50, "the citation scan found suspiciously few citations"
    assert not missing, "citations of sections docs/math.md does not have:\n" + "\n".join(missing)


def test_citation_parser_reads_lists_ranges_and_subsections() -> None:
    doc = "docs/math.md"
    text = (
        f"a ({doc} §1, §8) b\n({doc} §2-§4)\n``{doc}`` §7 and\n§9; {doc} §1.1 / §6; "
        f"{doc} and §5 unrelated"
    )
    found = [section for _, section in cited_sections(text)]
    assert sorted(set(found)) == ["1", "1.1", "2", "3", "4", "6", "7", "8", "9"]
    assert "5" not in found


def test_a_citation_of_a_missing_section_is_caught(math_text: str) -> None:
    headings = section_headings(math_text)
    bad = "see docs/math.md " + "§" + "11 and " + "§" + "4.7"
    assert [s for _, s in cited_sections(bad) if s not in headings] == ["11", "4.7"]


# --- oracle values ----------------------------------------------------------------------------


@pytest.mark.parametrize("section", ORACLE_SECTIONS)
def test_every_oracle_appears_in_the_test_suite(
    section: str, math_text: str, test_literals: set[float]
) -> None:
    oracles = oracle_values(top_level_sections(math_text)[section])
    assert oracles, f"docs/math.md §{section} lists no oracle values"
    unpinned = [spelling for spelling, value in oracles if not is_pinned(value, test_literals)]
    assert not unpinned, f"oracles of docs/math.md §{section} that no test uses: {unpinned}"


def test_an_oracle_missing_from_the_tests_is_caught(test_literals: set[float]) -> None:
    (spelling, value), fraction = oracle_values("`0.12345678901234567` and `5/7`")
    assert spelling == "0.12345678901234567"
    assert not is_pinned(value, test_literals)
    assert fraction == ("5/7", 5 / 7)
    assert is_pinned(1 / 3, numeric_literals("x = (3, 2, 1 / 3)"))
    assert is_pinned(-2.5, numeric_literals("y = -2.5"))
