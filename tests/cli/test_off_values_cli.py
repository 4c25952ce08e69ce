"""Values ChatDev accepts as "off" (null, empty, false) are accepted by `devall validate` and
`devall run`, silently, and change nothing: no false refusals of ChatDev workflows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.flows import invoke

FUNCTIONS = '''\
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()
'''

Document = dict[str, Any]


def base() -> Document:
    """An agent calling a function tool, then a passthrough: every key below hangs off it."""
    agent = {
        "provider": "scripted",
        "name": "m",
        "tooling": [{"type": "function", "config": {"tools": [{"name": "shout"}]}}],
        "script": [
            {"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}}]},
            {"content": "got {tool_result}"},
        ],
    }
    return {
        "version": "0.4.0",
        "graph": {
            "id": "off",
            "start": ["a"],
            "nodes": [
                {"id": "a", "type": "agent", "config": agent},
                {"id": "b", "type": "passthrough", "config": {}},
            ],
            "edges": [{"from": "a", "to": "b"}],
        },
    }


def agent(doc: Document) -> Document:
    config: Document = doc["graph"]["nodes"][0]["config"]
    return config


def tooling(doc: Document) -> Document:
    entry: Document = agent(doc)["tooling"][0]
    return entry


def first_edge(doc: Document) -> Document:
    found: Document = doc["graph"]["edges"][0]
    return found


OFF_VALUES: dict[str, Callable[[Document], None]] = {
    "prefix ''": lambda d: tooling(d).update(prefix=""),
    "prefix null": lambda d: tooling(d).update(prefix=None),
    "function timeout null": lambda d: tooling(d)["config"].update(timeout=None),
    "thinking null": lambda d: agent(d).update(thinking=None),
    "memories []": lambda d: agent(d).update(memories=[]),
    "skills enabled false": lambda d: agent(d).update(skills={"enabled": False, "allow": []}),
    "retry null": lambda d: agent(d).update(retry=None),
    "params timeout null": lambda d: agent(d).update(params={"timeout": None}),
    "input_mode ''": lambda d: agent(d).update(input_mode=""),
    "graph memory []": lambda d: d["graph"].update(memory=[]),
    "is_majority_voting false": lambda d: d["graph"].update(is_majority_voting=False),
    "graph vars {}": lambda d: d["graph"].update(vars={}),
    "top-level vars {}": lambda d: d.update(vars={}),
    "end []": lambda d: d["graph"].update(end=[]),
    "dynamic null": lambda d: first_edge(d).update(dynamic=None),
    "process null": lambda d: first_edge(d).update(process=None),
    "condition null": lambda d: first_edge(d).update(condition=None),
    "condition 'true'": lambda d: first_edge(d).update(condition="true"),
    "condition function true": lambda d: first_edge(d).update(
        condition={"type": "function", "config": {"name": "true"}}
    ),
    "edge flags false": lambda d: first_edge(d).update(
        keep_message=False, clear_context=False, clear_kept_context=False
    ),
    "context_window 0": lambda d: d["graph"]["nodes"][0].update(context_window=0),
}


@pytest.mark.parametrize("change", list(OFF_VALUES), ids=list(OFF_VALUES))
def test_an_off_value_is_accepted_and_changes_nothing(tmp_path: Path, change: str) -> None:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "loud.py").write_text(FUNCTIONS)
    doc = base()
    OFF_VALUES[change](doc)
    flow = tmp_path / "flow.yaml"
    flow.write_text(json.dumps(doc, indent=1))

    code, out, err = invoke("validate", str(flow), "--json")
    assert code == 0, out
    assert json.loads(out)["issues"] == []  # not even a warning

    code, out, err = invoke("run", str(flow), "--task", "t", "--out", "run", "-q")
    assert (code, out, err) == (0, "got HI\n", "")
