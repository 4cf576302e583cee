"""pyproject.toml: numba is a core dependency exactly where numba publishes wheels (issue 20)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def _project() -> dict[str, object]:
    with PYPROJECT.open("rb") as handle:
        project: dict[str, object] = tomllib.load(handle)["project"]
    return project


def _numba_specifiers(platform: str, machine: str, python: str) -> list[str]:
    """The numba version specifiers a plain install asks for on this platform."""
    environment = {
        "sys_platform": platform,
        "platform_machine": machine,
        "python_version": python,
        "python_full_version": f"{python}.0",
    }
    found = []
    for text in _project()["dependencies"]:  # type: ignore[attr-defined]
        requirement = Requirement(text)
        marker = requirement.marker
        if requirement.name == "numba" and (marker is None or marker.evaluate(environment)):
            found.append(str(requirement.specifier))
    return found


@pytest.mark.parametrize(
    ("platform", "machine", "python", "expected"),
    [
        ("linux", "x86_64", "3.11", [">=0.59"]),
        ("linux", "x86_64", "3.15", [">=0.59"]),
        ("linux", "aarch64", "3.12", [">=0.59"]),
        ("darwin", "arm64", "3.13", [">=0.59"]),
        ("win32", "AMD64", "3.11", [">=0.59"]),
        ("win32", "ARM64", "3.12", [">=0.59"]),
        ("darwin", "x86_64", "3.13", ["<0.63,>=0.59"]),
        # no numba wheels: the pure array path runs (and says so)
        ("darwin", "x86_64", "3.14", []),
        ("win32", "ARM64", "3.11", []),
        ("linux", "ppc64le", "3.12", []),
        ("linux", "x86_64", "3.16", []),
    ],
)
def test_numba_is_required_where_it_has_wheels(
    platform: str, machine: str, python: str, expected: list[str]
) -> None:
    assert _numba_specifiers(platform, machine, python) == expected


def test_fast_extra_is_kept_and_license_is_an_spdx_expression() -> None:
    project = _project()
    assert project["optional-dependencies"]["fast"] == ["numba>=0.59"]  # type: ignore[index]
    assert project["license"] == "Apache-2.0"
