"""The answers file of `devall run --answers`: what it may hold, and every problem located."""

from __future__ import annotations

from pathlib import Path

import pytest

from devall_cli import limits
from devall_cli.errors import ConfigError
from devall_cli.redaction import Redactor
from devall_cli.workflow.answers import load_answers

HUMANS = {"review", "outer/inner", "inner"}


def load(tmp_path: Path, text: str, name: str = "answers.yaml", secrets: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    (tmp_path / name).write_text(text)
    return load_answers(Path(name), HUMANS, Redactor(secrets))  # tests run in tmp_path


def issues(tmp_path: Path, text: str, **kwargs: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text, **kwargs)
    return [issue.headline() for issue in caught.value.issues]


def test_yaml_lists_per_node_and_for_any_node(tmp_path: Path) -> None:
    answers = load(tmp_path, "review: [fine, 'ACCEPT']\n'*': [any]\nouter/inner: [deep]\n")
    assert answers.replies == {
        "review": ("fine", "ACCEPT"),
        "*": ("any",),
        "outer/inner": ("deep",),
    }
    assert answers.file.endswith("answers.yaml")


def test_json_with_tab_indentation_is_read(tmp_path: Path) -> None:
    answers = load(tmp_path, '{\n\t"review": ["a\\nb", "caf\\u00e9"]\n}\n', name="a.json")
    assert answers.replies == {"review": ("a\nb", "café")}


def test_scalars_become_text_null_is_an_empty_reply_and_a_lone_text_is_one_reply(
    tmp_path: Path,
) -> None:
    answers = load(tmp_path, "review: [42, true, null, 1.5]\ninner: just this\n")
    assert answers.replies == {"review": ("42", "true", "", "1.5"), "inner": ("just this",)}


def test_multi_line_replies_keep_their_lines(tmp_path: Path) -> None:
    answers = load(tmp_path, "review:\n  - |\n    line one\n    line two\n")
    assert answers.replies["review"] == ("line one\nline two\n",)


def test_every_problem_is_reported_at_once_with_its_place(tmp_path: Path) -> None:
    found = issues(tmp_path, "reviw: [a]\nreview: {a: 1}\n'*': [[x], ok]\n")
    assert found == [
        "answers.yaml:1:1: reviw: 'reviw' is not a human node of the workflow "
        "(human nodes: inner, outer/inner, review); did you mean 'review'?",
        "answers.yaml:2:9: review: the replies for 'review' must be a list of texts, "
        "got a mapping",
        "answers.yaml:3:7: *[0]: each reply must be text, got a list",
    ]


def test_a_workflow_without_human_nodes_accepts_only_the_star(tmp_path: Path) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text("review: [a]\n'*': [b]\n")
    with pytest.raises(ConfigError) as caught:
        load_answers(path, set(), Redactor())
    (issue,) = caught.value.issues
    assert "the workflow has none (only '*' is accepted)" in issue.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the answers file is empty"),
        ("- a\n- b\n", "must be a mapping of node ids to lists of replies, got a list"),
        ("review: [a\n", "invalid YAML"),
    ],
)
def test_a_file_that_is_not_a_mapping_of_lists_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    (found,) = issues(tmp_path, text)
    assert message in found


def test_a_file_over_the_limit_is_refused_from_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "ANSWERS_FILE_BYTES", 100)
    (found,) = issues(tmp_path, "review: [" + "x" * 200 + "]\n")
    assert "the file is too large: 211 bytes; answers files may hold at most" in found


def test_secrets_are_masked_in_quoted_source_lines(tmp_path: Path) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text("review: {token: sk-answers-secret-123}\n")
    with pytest.raises(ConfigError) as caught:
        load_answers(path, HUMANS, Redactor(["sk-answers-secret-123"]))
    (issue,) = caught.value.issues
    assert "sk-answers" not in issue.source_line and "***" in issue.source_line


# --- tool_approvals: the decisions on tool calls the policy leaves to a person -----------------


def test_tool_approvals_map_tool_globs_to_answers_in_file_order(tmp_path: Path) -> None:
    answers = load(
        tmp_path,
        "review: [ok]\n"
        "tool_approvals:\n"
        "  write_*: [yes, No, ALWAYS]\n"
        "  server:fs: always\n"
        "  delete: [true, false]\n"
        "  rm: false\n",
    )
    assert answers.replies == {"review": ("ok",)}
    assert [(a.key, a.answers, a.repeat) for a in answers.approvals] == [
        ("write_*", ("yes", "no", "always"), False),
        ("server:fs", ("always",), True),
        ("delete", ("yes", "no"), False),
        ("rm", ("no",), True),
    ]
    assert answers.approvals[1].where.endswith("answers.yaml:4")


def test_a_human_node_named_tool_approvals_keeps_its_replies(tmp_path: Path) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text("tool_approvals: [first, second]\n")
    answers = load_answers(path, {"tool_approvals"}, Redactor())
    assert answers.replies == {"tool_approvals": ("first", "second")} and answers.approvals == ()
    path.write_text("tool_approvals: {write_*: yes}\n")  # a mapping is never replies
    answers = load_answers(path, {"tool_approvals"}, Redactor())
    assert answers.replies == {} and answers.approvals[0].key == "write_*"


def test_bad_tool_approvals_are_reported_at_once_with_their_place(tmp_path: Path) -> None:
    found = issues(
        tmp_path,
        "tool_approvals:\n"
        "  write_*: [yes, maybe]\n"
        "  'bad[': yes\n"
        "  destructiveHint: no\n"
        "  ok: {a: 1}\n"
        "review: [fine]\n",
    )
    assert found == [
        "answers.yaml:2:18: tool_approvals.write_*[1]: an approval must be yes, no or always, "
        "got 'maybe' (text)",
        "answers.yaml:3:3: tool_approvals.bad[: the glob 'bad[' has an unclosed '[' (a key of "
        "tool_approvals is a tool glob or server:GLOB)",
        "answers.yaml:4:3: tool_approvals.destructiveHint: 'destructiveHint' is an annotation "
        "hint: a key of tool_approvals names tools (a glob on the tool name, or server:GLOB)",
        "answers.yaml:5:7: tool_approvals.ok: an approval must be yes, no or always, got a mapping",
    ]
    (listed,) = issues(tmp_path, "tool_approvals: [yes]\n")
    assert listed == (
        "answers.yaml:1:17: tool_approvals: tool_approvals must be a mapping of tool names "
        "(globs, or server:GLOB) to yes, no or always, got a list"
    )
