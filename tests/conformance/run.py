"""Run the MCP conformance suite's client scenarios against devall, and compare with what we expect.

    python tests/conformance/run.py [SCENARIO ...] [--timeout SECONDS]    (make conformance)

The suite (@modelcontextprotocol/conformance 0.1.16) needs Node 22; `npm ci` in this folder
installs it together with a Node 22 binary from npm (the `node` package), whatever Node runs
npm (`make conformance-deps` does it once). Each scenario starts a test server, runs
devall_client.py against it and checks what the client did. A scenario's outcome is compared
with EXPECTED: the exit status is 0 when every outcome is the expected one.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
CLIENT = HERE / "devall_client.py"

# Every client scenario of the suite, and whether devall passes it (with the reason when not).
EXPECTED: dict[str, str] = {
    "initialize": "pass",
    "tools_call": "pass",
    "elicitation-sep1034-client-defaults": "pass",
    "sse-retry": "pass",
    "auth/metadata-default": "pass",
    "auth/metadata-var1": "pass",
    "auth/metadata-var2": "pass",
    "auth/metadata-var3": "pass",
    "auth/basic-cimd": "pass",
    "auth/scope-from-www-authenticate": "pass",
    "auth/scope-from-scopes-supported": "pass",
    "auth/scope-omitted-when-undefined": "pass",
    "auth/scope-step-up": "pass",
    "auth/scope-retry-limit": "pass",
    "auth/token-endpoint-auth-basic": "pass",
    "auth/token-endpoint-auth-post": "pass",
    "auth/token-endpoint-auth-none": "pass",
    "auth/pre-registration": "pass",
    "auth/2025-03-26-oauth-metadata-backcompat": (
        "fail: its metadata names an issuer other than the one it is fetched for; RFC 8414 "
        "section 3.3 says a client rejects it, and devall does"
    ),
    "auth/2025-03-26-oauth-endpoint-fallback": "pass",
    "auth/resource-mismatch": "pass",
    "auth/offline-access-scope": "pass",
    "auth/offline-access-not-supported": "pass",
    "auth/client-credentials-jwt": "pass",
    "auth/client-credentials-basic": "pass",
}


@dataclass(frozen=True)
class Outcome:
    """One scenario's result."""

    scenario: str
    passed: bool
    checks: str  # "15/15" as the suite counts its checks
    seconds: float
    output: str

    @property
    def expected(self) -> bool:
        """Whether the result is the one EXPECTED names."""
        return self.passed == EXPECTED.get(self.scenario, "pass").startswith("pass")


def installed() -> bool:
    """Whether the suite and its Node are installed here."""
    return (BIN / "conformance").exists() and (BIN / "node").exists()


def install() -> None:
    """`npm ci` in this folder (once; make conformance-deps does the same)."""
    if not installed():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True)


def run_scenario(scenario: str, timeout: float = 120.0) -> Outcome:
    """Run one scenario of the suite with devall as the client."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("NO_COLOR", "1")
    command = [
        str(BIN / "conformance"),
        "client",
        "--command",
        f"{sys.executable} {CLIENT}",
        "--scenario",
        scenario,
        "--timeout",
        str(int(timeout * 1000)),
    ]
    started = time.monotonic()
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout + 60, check=False
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    counted = re.search(r"Passed: (\d+/\d+)", output)
    return Outcome(
        scenario,
        "OVERALL: PASSED" in output,
        counted.group(1) if counted else "-",
        time.monotonic() - started,
        output,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios asked for (all by default); 0 when each outcome is the expected one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(EXPECTED))
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    install()
    surprises = 0
    for scenario in args.scenarios:
        outcome = run_scenario(scenario, args.timeout)
        verdict = "pass" if outcome.passed else "FAIL"
        note = "" if outcome.expected else "   <- not as expected"
        if not outcome.passed and not note:
            note = f"   (expected: {EXPECTED[scenario].removeprefix('fail: ')})"
        print(f"{verdict}  {scenario:45} {outcome.checks:>7} {outcome.seconds:5.1f}s{note}")
        if not outcome.expected:
            surprises += 1
            print("\n".join("    " + line for line in outcome.output.splitlines()[-25:]))
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
