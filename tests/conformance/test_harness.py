"""How run.py holds outcomes to the baseline, and which calls the client shim makes (no suite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance import devall_client, run


def _outcome(scenario: str, passed: bool) -> run.Outcome:
    return run.Outcome(scenario, passed, "1/1" if passed else "0/1", 1.0, "")


def test_a_listed_pass_and_an_unlisted_failure_are_both_surprises(tmp_path: Path) -> None:
    baseline = tmp_path / "expected-failures.yml"
    baseline.write_text("client:\n  - a  # a reason\n  - b  # another\n")
    reasons = run.load_baseline(baseline)
    assert reasons == {"a": "a reason", "b": "another"}
    verdicts = run.judge(
        [_outcome("a", True), _outcome("b", False), _outcome("c", False), _outcome("d", True)],
        reasons,
    )
    assert [v.expected for v in verdicts] == [False, True, False, True]
    text = run.summary(verdicts)
    assert "pass  a" in text and "remove it" in text
    assert "FAIL  c" in text and "the baseline does not list it" in text
    assert "2/4 scenarios pass; 2 fail, 2 not as the baseline" in text


def test_a_scenario_whose_checks_were_all_skipped_did_not_pass() -> None:
    skipped = "Passed: 0/0, 0 failed, 0 warnings\n\n\x1b[32mOVERALL: PASSED\x1b[0m"
    assert not run.read_outcome("s", skipped, 1.0).passed
    passed = run.read_outcome("s", skipped.replace("0/0", "3/3"), 1.0)
    assert passed.passed and passed.checks == "3/3"


def test_a_baseline_entry_needs_a_reason(tmp_path: Path) -> None:
    baseline = tmp_path / "expected-failures.yml"
    baseline.write_text("client:\n  - a\n")
    with pytest.raises(ValueError, match="'a' has no '# reason'"):
        run.load_baseline(baseline)


def test_the_shipped_baseline_reads() -> None:
    assert all(run.load_baseline().values())


def test_the_shim_calls_the_scenarios_own_tools() -> None:
    focal = {"name": "json_schema_2020_12_tool", "input_schema": {"$defs": {}, "type": "object"}}
    echo = {"name": "json_schema_echo", "input_schema": {"required": ["schema"]}}
    unknown = {"name": "lookup_user", "input_schema": {"required": ["id"]}}
    plain = {"name": "test_headers", "input_schema": {"properties": {}}}
    calls = devall_client.planned_calls("any", {}, [focal, echo, unknown, plain])
    assert calls == [
        ("json_schema_2020_12_tool", {}),
        ("json_schema_echo", {"schema": focal["input_schema"]}),  # what devall listed
        ("test_headers", {}),  # lookup_user needs an id nobody gave: only listed
    ]
    given = {"toolCalls": [{"name": "t", "arguments": {"x": 1}}]}
    assert devall_client.planned_calls("any", given, [plain]) == [("t", {"x": 1})]
