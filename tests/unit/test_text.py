"""The foreign-text rules: lone surrogates become U+FFFD, control characters are shown escaped."""

from __future__ import annotations

import json
from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from devall_cli.text import clean_text, clean_value, visible


def test_lone_surrogates_become_replacement_characters_and_split_pairs_are_joined() -> None:
    assert clean_text("a\ud800b\udcffc") == "a\ufffdb\ufffdc"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a pair that arrived as two code points
    assert clean_text("\ude00\ud83d") == "\ufffd\ufffd"  # the wrong order is no pair
    assert clean_text(json.loads('"x\\ud800"')) == "x\ufffd"


# Surrogates (Cs) among ordinary letters, controls and emoji.
_ANY_CHARACTER = st.characters(categories=["Cs", "Cc", "Ll", "Lo", "So"])


@given(st.text(alphabet=_ANY_CHARACTER, max_size=50))
def test_clean_text_is_always_encodable_and_leaves_valid_text_alone(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # never raises
    if all(not 0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert cleaned is text


def test_clean_value_cleans_keys_and_values_at_every_depth_and_copies_only_when_needed() -> None:
    value = {"a\ud800": [{"b": ("\udcff", 1, None)}], "ok": True}
    assert clean_value(value) == {"a\ufffd": [{"b": ("\ufffd", 1, None)}], "ok": True}
    clean = MappingProxyType({"text": ["plain", 2.5]})
    assert clean_value(clean) is clean


def test_visible_escapes_controls_and_keeps_tabs_and_newlines_only_in_bodies() -> None:
    hostile = "a\x1b[2J\x1b]52;c;ZXZpbA==\x07\x00\x7f\x9b\r\t\n\ud800\ufffe z"
    assert visible(hostile) == (
        "a\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x00\\x7f\\x9b\\x0d\\x09\\x0a\\ud800\\ufffe z"
    )
    assert visible(hostile, multiline=True) == (
        "a\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x00\\x7f\\x9b\\x0d\t\n\\ud800\\ufffe z"
    )
    plain = "naïve [bold] :bug: C:\\path"
    assert visible(plain) is plain


def test_clean_value_never_overflows_the_stack_on_deep_nesting() -> None:
    deep: list[object] = ["plain"]
    for _ in range(5000):
        deep = [deep]
    assert clean_value(deep) is deep
    odd: list[object] = ["\ud800"]
    for _ in range(5000):
        odd = [odd]
    clean_value(odd)  # too deep to rebuild: no RecursionError, the writers clean what they write
