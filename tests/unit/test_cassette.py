"""The cassette: what is kept, in which order it is written, how a replay finds each answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from devall_cli.cassette import exchange_scope, open_recording, open_replay, replay_placeholders
from devall_cli.cassette.tape import Tape
from devall_cli.errors import ConfigError, LLMHTTPError, ReplayMismatchError
from devall_cli.redaction import Redactor

SECRET = "sk-cassette-unit-93fd"


def record(path: Path, order: list[tuple[str, int, str]]) -> Tape:
    tape = open_recording(path, Redactor([SECRET]), workflow="w", placeholders={"URL": "u"})
    for node, visit, text in order:
        with exchange_scope(node, visit):
            tape.record({"type": "model", "endpoint": "e", "request": {"q": text}, "reply": text})
    return tape


def test_the_file_does_not_depend_on_the_order_things_happened(tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first = record(one, [("b", 1, "x"), ("a", 1, "y"), ("a", 2, "z")])
    second = record(two, [("a", 2, "z"), ("b", 1, "x"), ("a", 1, "y")])
    first.header["recorded"] = second.header["recorded"] = "same"
    first.close()
    second.close()
    assert one.read_text() == two.read_text()
    nodes = [(e["node"], e["visit"]) for e in map(json.loads, one.read_text().splitlines()[1:])]
    assert nodes == [("a", 1), ("a", 2), ("b", 1)]


def test_secrets_are_masked_before_anything_is_kept(tmp_path: Path) -> None:
    tape = record(tmp_path / "c.jsonl", [("a", 1, f"key={SECRET}")])
    tape.close()
    assert SECRET not in (tmp_path / "c.jsonl").read_text()
    assert replay_placeholders(tmp_path / "c.jsonl") == {"URL": "u"}


def test_a_replay_answers_by_visit_and_content_and_shows_a_diff_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record(path, [("a", 1, "first"), ("a", 1, "second"), ("b", 1, "other")]).close()
    tape = open_replay(path, Redactor())
    with exchange_scope("a", 1):
        # Asked in another order than recorded: each request finds its own answer.
        assert tape.take("model", "model request", {"endpoint": "e", "request": {"q": "second"}})[
            "reply"
        ] == "second"
        assert tape.take("model", "model request", {"endpoint": "e", "request": {"q": "first"}})[
            "reply"
        ] == "first"
        with pytest.raises(ReplayMismatchError, match="served already"):
            tape.take("model", "model request", {"endpoint": "e", "request": {"q": "first"}})
    with exchange_scope("b", 1), pytest.raises(ReplayMismatchError) as caught:
        tape.take("model", "model request", {"endpoint": "e", "request": {"q": "changed"}})
    assert "node 'b' visit 1 sent a model request that differs" in caught.value.message
    assert '-    "q": "other"' in caught.value.details
    assert '+    "q": "changed"' in caught.value.details
    assert caught.value.exit_code == 6
    with exchange_scope("c", 3), pytest.raises(ReplayMismatchError) as none:
        tape.take("model", "model request", {"endpoint": "e", "request": {"q": "x"}})
    assert "holds none for node 'c' visit 3 (it holds: a visit 1, b visit 1)" in none.value.message
    assert [e["node"] for e in tape.unused()] == ["b"]


def test_a_recorded_error_is_raised_again(tmp_path: Path) -> None:
    from devall_cli.cassette import error_entry, raise_recorded

    entry = error_entry(LLMHTTPError("model endpoint x answered 503", status_code=503))
    with pytest.raises(LLMHTTPError) as caught:
        raise_recorded(json.loads(json.dumps(entry)))
    assert caught.value.status_code == 503 and caught.value.exit_code == 5


def test_outputs_are_handed_on_in_the_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    tape = record(path, [])
    for node in ("c", "a", "b"):  # the order they finished in when recorded
        asyncio.run(tape.visit_done(node, 1))
    tape.close()
    replay = open_replay(path, Redactor())
    handed: list[str] = []

    async def visit(node: str, delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        await replay.visit_done(node, 1)
        handed.append(node)

    async def main() -> None:
        for node in ("a", "b", "c", "new"):
            replay.visit_started(node, 1)
        # Finishing a, b, c in that order (and one visit the recording never had).
        await asyncio.gather(visit("a", 0), visit("b", 2), visit("c", 4), visit("new", 1))

    asyncio.run(main())
    assert [n for n in handed if n != "new"] == ["c", "a", "b"]


def test_when_every_running_visit_waits_the_first_recorded_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    tape = record(path, [])
    for node in ("gone", "a", "b"):
        asyncio.run(tape.visit_done(node, 1))
    tape.close()
    replay = open_replay(path, Redactor())
    handed: list[str] = []

    async def main() -> None:
        # `gone` started but failed: nothing waits for it.
        for node in ("gone", "b", "a"):
            replay.visit_started(node, 1)
        replay.visit_failed("gone", 1)

        async def visit(node: str) -> None:
            await replay.visit_done(node, 1)
            handed.append(node)

        await asyncio.wait_for(asyncio.gather(visit("b"), visit("a")), timeout=5)

    asyncio.run(main())
    assert handed == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the cassette is empty"),
        ("not json\n", ":1: not a JSON line"),
        ('{"type": "header", "format": "other"}\n', ":1: not a devall cassette"),
        ('[1]\n', ":1: each line must be a JSON object"),
        (
            '{"type": "header", "format": "devall-cassette", "version": 1}\n{"type": "x"}\n',
            ":2: unknown entry type 'x'",
        ),
    ],
)
def test_a_bad_cassette_is_refused_naming_the_line(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        open_replay(path, Redactor())


def test_a_cassette_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "cassette.jsonl"
    os.mkfifo(fifo)  # opening it to read would wait for a writer for ever
    with pytest.raises(ConfigError, match="not a regular file"):
        open_replay(fifo, Redactor())
    with pytest.raises(ConfigError, match="not a regular file"):
        replay_placeholders(fifo)
