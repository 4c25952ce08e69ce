"""JUnit XML reports for CI dashboards (`devall probe --junit`, `devall test --junit`).

One `<testsuite>` of `<testcase>`s, each with its `<failure>`s (one per thing that failed) or a
`<system-out>` line. Text is made safe for XML 1.0 first: the control characters it forbids are
written as escapes such as `\\x1b`, so whatever a server or a model said, the file parses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devall_cli.errors import UsageError
from devall_cli.text import visible


@dataclass(frozen=True)
class JUnitFailure:
    """One `<failure type=... message=...>text</failure>`."""

    type: str
    message: str
    text: str = ""


@dataclass(frozen=True)
class JUnitCase:
    """One `<testcase>`: passed when it has no failures."""

    name: str
    classname: str
    seconds: float
    failures: Sequence[JUnitFailure] = field(default_factory=tuple)
    output: str | None = None  # `<system-out>` of a case that passed


def write_junit(path: Path, suite_name: str, cases: Sequence[JUnitCase]) -> None:
    """Write the report to `path` (its folder created); UsageError when it cannot be written."""
    from xml.etree import ElementTree

    failed = sum(1 for case in cases if case.failures)
    total = sum(case.seconds for case in cases)
    suite = ElementTree.Element(
        "testsuite",
        name=_xml(suite_name),
        tests=str(len(cases)),
        failures=str(failed),
        time=f"{total:.3f}",
    )
    for case in cases:
        element = ElementTree.SubElement(
            suite,
            "testcase",
            classname=_xml(case.classname),
            name=_xml(case.name),
            time=f"{case.seconds:.3f}",
        )
        for failure in case.failures:
            item = ElementTree.SubElement(
                element, "failure", type=_xml(failure.type), message=_xml(failure.message)
            )
            item.text = _xml(failure.text)
        if not case.failures and case.output is not None:
            ElementTree.SubElement(element, "system-out").text = _xml(case.output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise UsageError(f"cannot write --junit {path}: {exc.strerror or exc}") from None


def _xml(text: str) -> str:
    """Text XML 1.0 can hold: the characters it forbids (most controls) shown escaped."""
    return visible(text, multiline=True)
