"""Every expectation kind, holding and not, checked on real runs of scripted workflows.

One `run_tests` over one test file: a case whose run goes well (a scripted agent calling two
function tools, a passthrough node) carries each kind of expectation twice, once true and once
false; a case whose model cannot be reached checks `expect_exit` and `error`, and the same case
without them fails as the environment's fault (exit 4). A trailing `# ok`
or `# FAIL` on each line of the file says how that expectation must come out.
"""

from __future__ import annotations

import re
from pathlib import Path

from devall_cli.testing import SuiteRequest, SuiteResult, run_tests
from devall_cli.testing.document import suite_exit_code
from tests.helpers import free_port, write_tool_flow

CASES = """\
cases:
  - name: every kind
    workflow: flow.yaml
    task: the weather
    expect:
      - output: {contains: Paris}  # ok
      - output: {equals: '{"city": "Paris", "forecast": {"days": [1, 2]}, "ok": true}'}  # ok
      - output: {regex: "Lyon"}  # FAIL
      - output: {not_contains: Paris}  # FAIL
      - output: {json_schema: {type: object, required: [city, ok]}}  # ok
      - output: {json_schema: {type: object, required: [wind]}}  # FAIL
      - output: {json_path: {path: "$.forecast.days[1]", equals: 2}}  # ok
      - output: {json_path: {path: "$.ok", equals: 1}}  # FAIL
      - node: {id: teller, visits: 1, status: ok, output: {contains: forecast}}  # ok
      - node: {id: writer, visits: 2}  # FAIL
      - node: {id: teller, visit: 1, output: {regex: "^[{]"}}  # ok
      - tool: {name: lookup, args: {city: Paris}, times: 1}  # ok
      - tool: {name: lookup, args_regex: {city: "^Lon"}}  # FAIL
      - tool: {name: shout, node: teller, min_times: 1, max_times: 1}  # ok
      - tool: {name: shout, called: false}  # FAIL
      - tool: {name: delete_all, called: false}  # ok
      - tool_order: [lookup, shout]  # ok
      - tool_order: [shout, lookup]  # FAIL
      - edge: {from: teller, to: writer, times: 1}  # ok
      - edge: {from: teller, to: writer, fired: false}  # FAIL
      - budget: {model_calls: 3, tool_calls: 2, tokens: 10, seconds: 60}  # ok
      - budget: {tool_calls: 1}  # FAIL
      - budget: {cost: 1}  # FAIL
      - judge: {model: {provider: scripted, script: ['{"score": 0.8, "reasoning": "fine"}']},
                rubric: r}  # ok
      - judge: {model: {provider: scripted, script: ['Score: high']}, rubric: r}  # FAIL
  - name: a run expected to fail
    workflow: broken.yaml
    expect_exit: 4
    expect:
      - error: {contains: cannot reach model endpoint}  # ok
      - error: {regex: "HTTP 5\\\\d\\\\d"}  # FAIL
  - name: a run that cannot reach its model
    workflow: broken.yaml
"""


def broken_flow(folder: Path) -> None:
    """A workflow whose model is at a port where nothing listens (exit 4)."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = f"{{provider: openai, name: m, base_url: '{url}', params: {{retries: 0}}}}"
    (folder / "broken.yaml").write_text(
        f"graph:\n  id: broken\n  start: [asker]\n  nodes:\n"
        f"    - {{id: asker, type: agent, config: {config}}}\n"
    )


async def test_every_kind_holds_and_fails_where_it_should(tmp_path: Path) -> None:
    write_tool_flow(tmp_path)
    broken_flow(tmp_path)
    (tmp_path / "kinds.test.yaml").write_text(CASES)
    marked = [line for line in CASES.splitlines() if re.search(r"# (ok|FAIL)$", line)]
    wanted = [line.endswith("# ok") for line in marked]

    suite = await run_tests(SuiteRequest(path=tmp_path, out_dir=tmp_path / "out", concurrency=2))

    kinds, failing, unreachable = suite.cases
    found = [e.passed for case in suite.cases[:2] for e in case.expectations if e.kind != "exit"]
    assert found == wanted, [(e.label, e.message) for c in suite.cases for e in c.expectations]
    assert not kinds.passed and not failing.passed
    assert not kinds.connection_failure and not failing.connection_failure
    assert unreachable.connection_failure  # only: the environment is at fault, exit 4
    assert suite_exit_code(SuiteResult((unreachable,), tmp_path)) == 4
    assert suite_exit_code(suite) == 1
    assert kinds.exit_code == 0 and failing.exit_code == 4
    exit_check = failing.expectations[0]
    assert (exit_check.kind, exit_check.passed, exit_check.actual) == ("exit", True, 4)
    by_label = {e.label: e for e in kinds.expectations if not e.passed}
    shout = by_label["expect[14] tool shout"]
    assert shout.message == "expect[14] tool shout: tool shout was called once, expected never"
    assert shout.actual == [{"node": "teller", "arguments": {"text": "hi"}}]
    assert "cost: no price for " in by_label["expect[22] budget"].message
    assert by_label["expect[7] output"].actual is True  # the value found at the path
    graded = [e for e in kinds.expectations if e.kind == "judge"]
    assert graded[0].extra["score"] == 0.8 and graded[0].extra["reasoning"] == "fine"
    assert "no JSON object with a score" in graded[1].message
    assert (tmp_path / "out" / "every-kind" / "result.json").is_file()
    assert (tmp_path / "out" / "a-run-expected-to-fail" / "events.jsonl").is_file()
