"""Run the MCP conformance suite's client scenarios against devall, and hold them to the baseline.

    python tests/conformance/run.py [SCENARIO ...] [--jobs N] [--timeout SECONDS]

The scenarios are those the pinned suite's `conformance list --client` prints (all of them when
none is named). The suite (@modelcontextprotocol/conformance, pinned in package.json) needs
Node 22; `npm ci` in this folder installs it with a Node 22 binary from npm (the `node`
package), whatever Node runs npm (`make conformance-deps` does it once). Each scenario starts a
test server, runs devall_client.py against it and checks what the client did; a few run at a
time. A scenario passes when the suite says OVERALL: PASSED and at least one of its checks
succeeded (a scenario whose checks were all skipped tested nothing). Each outcome is compared
with expected-failures.yml: the exit status is 1 when a listed scenario passes or an unlisted
one fails, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
CLIENT = HERE / "devall_client.py"
BASELINE = HERE / "expected-failures.yml"
PACKAGE = "@modelcontextprotocol/conformance"
# The title of the summary's report section under pytest (tests/conftest.py prints it).
SECTION = "MCP conformance suite"
# Seconds a scenario's client may take: a few on an idle machine, far more on a loaded one.
TIMEOUT = 120.0
# A baseline entry and its reason: `  - SCENARIO  # REASON` under `client:`.
ENTRY = re.compile(r"^\s*-\s*(?P<scenario>[^\s#]+)\s*(?:#\s*(?P<reason>.*\S))?\s*$")


@dataclass(frozen=True)
class Outcome:
    """One scenario's result."""

    scenario: str
    passed: bool
    checks: str  # "15/15": the checks that succeeded, of those that ran
    seconds: float
    output: str


@dataclass(frozen=True)
class Verdict:
    """One outcome held to the baseline."""

    outcome: Outcome
    reason: str | None  # the baseline's reason when the scenario is expected to fail

    @property
    def expected(self) -> bool:
        """Whether the outcome is the one the baseline names."""
        return self.outcome.passed == (self.reason is None)

    def line(self) -> str:
        """The scenario's summary line."""
        outcome = self.outcome
        verdict = "pass" if outcome.passed else "FAIL"
        if self.expected:
            note = f"   (baseline: {self.reason})" if self.reason else ""
        elif outcome.passed:
            note = "   <- passes, but the baseline lists it: remove it"
        else:
            note = "   <- fails, and the baseline does not list it"
        return f"{verdict}  {outcome.scenario:45} {outcome.checks:>7} {outcome.seconds:5.1f}s{note}"


def pinned_version() -> str:
    """The suite's version that package.json pins."""
    package = json.loads((HERE / "package.json").read_text())
    return str(package["dependencies"][PACKAGE])


def installed() -> bool:
    """Whether the pinned suite and its Node are installed here."""
    manifest = HERE / "node_modules" / PACKAGE / "package.json"
    if not ((BIN / "conformance").exists() and (BIN / "node").exists() and manifest.exists()):
        return False
    return bool(json.loads(manifest.read_text()).get("version") == pinned_version())


def install() -> None:
    """`npm ci` in this folder unless the pinned suite is there (make conformance-deps)."""
    if not installed():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True)


def _environment() -> dict[str, str]:
    """The environment the suite runs in: its own Node 22 first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("NO_COLOR", "1")
    return env


def list_scenarios() -> list[str]:
    """Every client scenario of the pinned suite, as `conformance list --client` prints them."""
    listed = subprocess.run(
        [str(BIN / "conformance"), "list", "--client"],
        env=_environment(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = re.findall(r"^\s+-\s+(\S+)", listed.stdout, re.MULTILINE)
    if not names:
        raise RuntimeError(f"`conformance list --client` listed no scenario:\n{listed.stdout}")
    return names


def load_baseline(path: Path = BASELINE) -> dict[str, str]:
    """The expected failures, scenario to reason; an entry without a reason is refused."""
    text = path.read_text()
    listed = (yaml.safe_load(text) or {}).get("client") or []
    reasons: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        entry = ENTRY.match(line)
        if not entry:
            continue
        if not entry["reason"]:
            raise ValueError(f"{path}:{number}: {entry['scenario']!r} has no '# reason'")
        reasons[entry["scenario"]] = entry["reason"]
    if set(reasons) != set(listed):  # a per-check entry or a list written another way
        raise ValueError(f"{path}: write each entry as '  - SCENARIO  # reason' under client:")
    return reasons


def run_scenario(scenario: str, timeout: float = TIMEOUT) -> Outcome:
    """Run one scenario of the suite with devall as the client."""
    command = [
        str(BIN / "conformance"), "client",
        "--command", f"{sys.executable} {CLIENT}",
        "--scenario", scenario,
        "--timeout", str(int(timeout * 1000)),
    ]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            env=_environment(), capture_output=True, text=True, timeout=timeout + 60, check=False,
        )  # fmt: skip
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:  # the suite itself hung: a failure, not a crash
        captured = [part or b"" for part in (exc.stdout, exc.stderr)]  # bytes, even with text=True
        output = b"".join(captured).decode(errors="replace")
        output += f"\nthe suite did not end in {exc.timeout} s"
    return read_outcome(scenario, output, time.monotonic() - started)


def read_outcome(scenario: str, output: str, seconds: float) -> Outcome:
    """The outcome the suite's output tells: passed only if some check succeeded."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    counted = re.search(r"Passed: (\d+)/(\d+)", output)
    succeeded = int(counted.group(1)) if counted else 0
    checks = f"{counted.group(1)}/{counted.group(2)}" if counted else "-"
    return Outcome(scenario, "OVERALL: PASSED" in output and succeeded > 0, checks, seconds, output)


def run_all(
    scenarios: Sequence[str], jobs: int = 3, timeout: float = TIMEOUT
) -> Iterator[Outcome]:
    """Run the scenarios, `jobs` at a time; their outcomes in the order given, as they come."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(lambda name: run_scenario(name, timeout), scenarios)


def judge(outcomes: Iterable[Outcome], baseline: dict[str, str]) -> list[Verdict]:
    """Each outcome with its baseline reason."""
    return [Verdict(outcome, baseline.get(outcome.scenario)) for outcome in outcomes]


def summary(verdicts: Sequence[Verdict], lines: bool = True, tail: int = 20) -> str:
    """A line per scenario (unless printed already), the totals, the output of each surprise."""
    text = [verdict.line() for verdict in verdicts] if lines else []
    passed = sum(verdict.outcome.passed for verdict in verdicts)
    surprises = [verdict for verdict in verdicts if not verdict.expected]
    text.append(
        f"{passed}/{len(verdicts)} scenarios pass; {len(verdicts) - passed} fail, "
        f"{len(surprises)} not as the baseline ({BASELINE.name}) expects"
    )
    for verdict in surprises:
        text.append(f"\n--- {verdict.outcome.scenario}: the client's stderr, the suite's verdict")
        text.extend("    " + line for line in excerpt(verdict.outcome.output, tail))
    return "\n".join(text)


def excerpt(output: str, most: int = 20) -> list[str]:
    """What tells why a scenario failed: the client's stderr (its end) and the suite's results."""
    lines = [line for line in output.splitlines() if line.strip()]
    marks = [n for n, line in enumerate(lines) if line.startswith(("Stderr:", "Checks:"))]
    stderr = lines[marks[0] + 1 : marks[1]][-most:] if len(marks) > 1 else []
    results = next((n for n, line in enumerate(lines) if line.startswith("Test Results:")), None)
    return stderr + (lines[results:] if results is not None else lines[-most:])


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios asked for (all by default); 0 when each outcome is the expected one."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="default: every client scenario")
    parser.add_argument("--jobs", type=int, default=3, help="scenarios run at once (3)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per scenario")
    args = parser.parse_args(argv)
    install()
    known = list_scenarios()
    unknown = sorted(set(args.scenarios) - set(known))
    if unknown:
        parser.error(f"not a client scenario of the suite: {', '.join(unknown)}")
    baseline = load_baseline()
    stale = sorted(set(baseline) - set(known))
    verdicts = []
    for outcome in run_all(args.scenarios or known, args.jobs, args.timeout):
        verdicts.extend(judge([outcome], baseline))
        print(verdicts[-1].line(), flush=True)
    print(summary(verdicts, lines=False))
    if stale:
        print(f"baseline names scenarios the suite does not have: {', '.join(stale)}")
    return 1 if stale or any(not verdict.expected for verdict in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
