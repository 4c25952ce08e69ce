"""Every client scenario of the pinned MCP conformance suite, run against devall (see run.py).

The suite and its Node 22 come from npm (`make test` installs them, see the Makefile); without
them this test is skipped with the command that installs them. It runs the scenarios a few at a
time and fails when an outcome differs from expected-failures.yml; its summary (a line per
scenario: pass/FAIL, checks, seconds) is a report section, printed at the end of the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance import run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not run.installed(),
        reason="the pinned conformance suite is not installed: make conformance-deps",
    ),
]

# Scenarios at once: each is a Node server, a devall command or two and the suite's checks.
JOBS = 3


def test_every_client_scenario_is_as_the_baseline_expects(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    scenarios = run.list_scenarios()
    baseline = run.load_baseline()
    assert set(baseline) <= set(scenarios), "the baseline names scenarios the suite does not have"
    verdicts = run.judge(run.run_all(scenarios, JOBS), baseline)
    text = run.summary(verdicts)
    saved = tmp_path / "conformance-summary.txt"
    saved.write_text(text + "\n" + "\n\n".join(v.outcome.output for v in verdicts))
    request.node.add_report_section("call", run.SECTION, f"{text}\n(outputs: {saved})")
    assert len(verdicts) == len(scenarios)
    surprises = [verdict.outcome.scenario for verdict in verdicts if not verdict.expected]
    assert not surprises, f"not as {run.BASELINE.name} expects: {', '.join(surprises)}"
