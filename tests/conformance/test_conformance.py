"""A few of the MCP conformance suite's auth scenarios, run against devall (run.py runs them all).

The suite and its Node 22 come from npm (`make test` installs them, see the Makefile); without
them these tests are skipped with the command that installs them.
"""

from __future__ import annotations

import pytest

from tests.conformance import run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not run.installed(),
        reason="the conformance suite is not installed: make conformance-deps",
    ),
]


@pytest.mark.parametrize(
    "scenario",
    [
        "auth/metadata-default",  # discovery, dynamic registration, PKCE
        "elicitation-sep1034-client-defaults",  # elicitation answered with the schema's defaults
        "auth/client-credentials-jwt",  # client credentials with private_key_jwt
    ],
)
def test_scenario_passes(scenario: str) -> None:
    outcome = run.run_scenario(scenario)
    assert outcome.passed, outcome.output[-3000:]


def test_a_metadata_naming_another_issuer_is_refused() -> None:
    outcome = run.run_scenario("auth/2025-03-26-oauth-metadata-backcompat")
    assert not outcome.passed
    assert "issuer mismatch" in outcome.output
