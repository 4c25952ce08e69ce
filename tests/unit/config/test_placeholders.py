"""`${NAME}` placeholders: every rule of SPEC.md §2, plus property tests of the resolver."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devall_cli.config.placeholders import (
    UNRESOLVED,
    PlaceholderError,
    PlaceholderResolver,
    TextValue,
    is_secret_name,
    parse_template,
)
from devall_cli.errors import ConfigError


def resolver(**kwargs: Any) -> PlaceholderResolver:
    return PlaceholderResolver(**kwargs)


# --- pattern ------------------------------------------------------------------------------


def test_name_of_letters_digits_underscore_is_replaced() -> None:
    r = resolver(environ={"My_Var_2": "x"})
    assert r.resolve_text("a-${My_Var_2}-b") == "a-x-b"


@pytest.mark.parametrize("text", ["${with-dash}", "${a b}", "${}", "${unclosed", "$NAME", "{NAME}"])
def test_text_that_is_not_a_placeholder_is_kept(text: str) -> None:
    assert resolver(environ={"NAME": "x"}).resolve_text(text) == text


def test_malformed_placeholder_is_reported_as_a_warning_in_trees() -> None:
    r = resolver()
    assert r.resolve_tree({"k": "${not valid}"}, ("top",)) == {"k": "${not valid}"}
    assert [(path, severity) for path, _, severity in r.issues] == [(("top", "k"), "warning")]


def test_keys_are_never_resolved() -> None:
    r = resolver(environ={"K": "v"})
    assert r.resolve_tree({"${K}": "${K}"}, ()) == {"${K}": "v"}


# --- types --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [42, 1.5, True, False, None, [1, "two"], {"a": 1}],
)
def test_whole_value_placeholder_keeps_the_yaml_type(value: Any) -> None:
    r = resolver(vars_block={"V": value})
    r.resolve_vars()
    assert r.resolve_text("${V}") == value
    assert type(r.resolve_text("${V}")) is type(value)


def test_surrounding_spaces_still_count_as_a_whole_value() -> None:
    r = resolver(vars_block={"N": 7})
    assert r.resolve_text("  ${N} ") == 7


@pytest.mark.parametrize(
    ("value", "text"),
    [(42, "v=42"), (True, "v=true"), (None, "v="), ([1, "a"], 'v=[1, "a"]'), (1.5, "v=1.5")],
)
def test_placeholder_inside_a_longer_string_becomes_text(value: Any, text: str) -> None:
    r = resolver(vars_block={"V": value})
    assert r.resolve_text("v=${V}") == text


def test_two_placeholders_make_a_string() -> None:
    r = resolver(vars_block={"A": 1, "B": 2})
    assert r.resolve_text("${A}${B}") == "12"


def test_text_sources_give_text_values() -> None:
    r = resolver(environ={"E": "10"})
    value = r.resolve_text("${E}")
    assert isinstance(value, TextValue)
    assert value == "10"


# --- lookup order -------------------------------------------------------------------------


def test_vars_come_before_the_environment() -> None:
    r = resolver(vars_block={"X": "from-vars"}, environ={"X": "from-env"})
    assert r.resolve_text("${X}") == "from-vars"


def test_cli_vars_override_vars() -> None:
    r = resolver(vars_block={"X": "from-vars"}, cli_vars={"X": "from-cli"}, environ={"X": "env"})
    assert r.resolve_text("${X}") == "from-cli"
    assert r.resolve_vars()["X"] == "from-cli"


def test_environment_comes_before_dotenv() -> None:
    r = resolver(environ={"X": "env"}, dotenv={"X": "dotenv", "Y": "only-dotenv"})
    assert r.resolve_text("${X} ${Y}") == "env only-dotenv"


def test_vars_are_resolved_recursively_and_see_cli_overrides() -> None:
    r = resolver(
        vars_block={"URL": "http://${HOST}:${PORT}/mcp", "HOST": "localhost", "PORT": 8001},
        cli_vars={"HOST": "127.0.0.1"},
    )
    assert r.resolve_vars()["URL"] == "http://127.0.0.1:8001/mcp"


def test_vars_can_hold_structures_with_placeholders() -> None:
    r = resolver(vars_block={"ARGS": ["--port", "${PORT}"], "PORT": 9})
    assert r.resolve_text("${ARGS}") == ["--port", 9]


def test_vars_cycle_is_an_error_naming_the_cycle() -> None:
    r = resolver(vars_block={"A": "${B}", "B": "x${A}"})
    resolved = r.resolve_vars()
    assert resolved == {"A": UNRESOLVED, "B": UNRESOLVED}
    assert len(r.issues) == 1  # reported once, where the cycle closes
    path, message, severity = r.issues[0]
    assert severity == "error"
    assert "A -> B -> A" in message
    assert path == ("vars", "B")


def test_self_reference_reads_the_environment_instead_of_being_a_cycle() -> None:
    r = resolver(vars_block={"API_KEY": "${API_KEY}"}, environ={"API_KEY": "sk-from-env"})
    assert r.resolve_vars()["API_KEY"] == "sk-from-env"
    assert r.issues == []


def test_self_reference_inside_a_longer_string_reads_the_environment() -> None:
    r = resolver(vars_block={"PATH_LIST": "/opt/bin:${PATH_LIST}"}, dotenv={"PATH_LIST": "/bin"})
    assert r.resolve_vars()["PATH_LIST"] == "/opt/bin:/bin"


def test_self_reference_without_an_environment_value_is_unresolved() -> None:
    r = resolver(vars_block={"API_KEY": "${API_KEY}"})
    assert r.resolve_vars()["API_KEY"] is UNRESOLVED
    assert "unresolved placeholder ${API_KEY}" in r.issues[0][1]


# --- defaults and escapes -----------------------------------------------------------------


def test_default_is_used_when_unset() -> None:
    assert resolver().resolve_text("${MODEL:-gpt-4o-mini}") == "gpt-4o-mini"


def test_default_is_used_when_empty() -> None:
    r = resolver(environ={"MODEL": ""})
    assert r.resolve_text("${MODEL:-gpt-4o-mini}") == "gpt-4o-mini"


def test_default_is_ignored_when_set() -> None:
    r = resolver(environ={"MODEL": "llama3"})
    assert r.resolve_text("${MODEL:-gpt-4o-mini}") == "llama3"


def test_empty_default_is_allowed() -> None:
    assert resolver().resolve_text("[${X:-}]") == "[]"


def test_default_may_contain_placeholders_and_urls() -> None:
    r = resolver(environ={"HOST": "example.org"})
    assert r.resolve_text("${URL:-https://${HOST}/v1}") == "https://example.org/v1"


def test_default_of_a_whole_value_is_text_that_may_be_a_number() -> None:
    value = resolver().resolve_text("${TIMEOUT:-10}")
    assert isinstance(value, TextValue)
    assert value == "10"


def test_double_dollar_is_a_literal_placeholder() -> None:
    r = resolver(environ={"HOME": "/root"})
    assert r.resolve_text("cost: $${HOME} and ${HOME}") == "cost: ${HOME} and /root"


def test_escaped_whole_value_stays_text() -> None:
    assert resolver().resolve_text("$${NOT_A_VAR}") == "${NOT_A_VAR}"


# --- errors -------------------------------------------------------------------------------


def test_unresolved_name_raises_a_config_error_naming_it() -> None:
    with pytest.raises(PlaceholderError, match=r"\$\{MISSING\}"):
        resolver().resolve_text("x ${MISSING}")


def test_unresolved_name_in_a_tree_is_reported_at_its_path() -> None:
    r = resolver()
    tree = r.resolve_tree({"graph": {"nodes": [{"id": "${NOPE}"}]}}, ())
    assert tree["graph"]["nodes"][0]["id"] is UNRESOLVED
    assert r.issues[0][0] == ("graph", "nodes", 0, "id")


def test_a_broken_var_is_reported_once_not_at_every_use() -> None:
    r = resolver(vars_block={"A": "${MISSING}", "B": "${A}"})
    r.resolve_vars()
    r.resolve_tree({"x": "${A}", "y": "${B}"}, ())
    assert [path for path, _, _ in r.issues] == [("vars", "A")]


def test_very_deep_defaults_are_an_error_not_a_crash() -> None:
    text = "${A:-" * 200 + "x" + "}" * 200
    with pytest.raises(ConfigError):
        resolver().resolve_text(text)


def test_long_chains_of_vars_are_an_error_not_a_crash() -> None:
    chain = {f"V{i}": f"${{V{i + 1}}}" for i in range(300)}
    chain["V300"] = "end"
    r = resolver(vars_block=chain)
    r.resolve_vars()
    assert any("levels deep" in message for _, message, _ in r.issues)


# --- secrets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("API_KEY", True),
        ("github_token", True),
        ("CLIENT_SECRET", True),
        ("DB_PASSWORD", True),
        ("AUTH_HEADER", True),
        ("MODEL", False),
        ("BASE_URL", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_values_of_secret_placeholders_are_collected() -> None:
    r = resolver(environ={"API_KEY": "sk-1234567", "MODEL": "gpt-4o", "MY_TOKEN": "abc"})
    r.resolve_text("Bearer ${API_KEY} for ${MODEL} ${MY_TOKEN}")
    assert r.secrets == {"sk-1234567", "abc"}  # the Redactor leaves out the short one


def test_defaults_of_secret_placeholders_are_secrets_too() -> None:
    r = resolver()
    r.resolve_text("${SERVICE_TOKEN:-tok-default}")
    assert r.secrets == {"tok-default"}


def test_vars_with_secret_names_are_secrets() -> None:
    r = resolver(vars_block={"ACCESS_TOKEN": "literal-token", "NAME": "visible"})
    r.resolve_vars()
    assert r.secrets == {"literal-token"}


# --- parsing and properties ---------------------------------------------------------------


def test_parse_template_counts_malformed_openings() -> None:
    segments, malformed = parse_template("${A} ${ ${B:-x}")
    assert malformed == 1
    assert [type(s).__name__ for s in segments] == ["PlaceholderRef", "str", "PlaceholderRef"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("${}:-_ aZ09\\$")) | st.characters(), max_size=80))
def test_resolver_never_crashes(text: str) -> None:
    r = resolver(vars_block={"a": "${Z}", "Z": 1}, environ={"aZ0": "v"})
    with contextlib.suppress(ConfigError):
        r.resolve_text(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80).filter(lambda s: "${" not in s))
def test_strings_without_placeholders_are_unchanged(text: str) -> None:
    r = resolver(environ={"X": "y"})
    once = r.resolve_text(text)
    assert once == text
    assert r.resolve_text(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("${}:-_ ab\n")), max_size=40))
def test_fully_resolved_text_is_a_fixed_point(text: str) -> None:
    r = resolver(environ={"a": "1", "b": "2"}, vars_block={"ab": "3"})
    try:
        once = r.resolve_text(text)
    except ConfigError:
        return
    if isinstance(once, str) and "${" not in once:
        assert r.resolve_text(once) == once
