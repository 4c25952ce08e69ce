"""The one secrets rule: which names are secret, what is masked, and what never is."""

from __future__ import annotations

import base64

import pytest

from devall_cli.redaction import (
    Redactor,
    flag_secrets,
    is_secret_name,
    masking,
    preview,
    url_credentials,
)


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY", "api_key", "X-Api-Key", "APIKey", "apikey", "key", "SSH_KEYS",
        "github_token", "apiToken", "accessToken", "accesstoken", "refresh_token",
        "clientSecret", "CLIENT_SECRET", "DB_PASSWORD", "dbpassword", "passwd", "pwd",
        "Authorization", "Proxy-Authorization", "AUTH_HEADER", "X-Auth", "Cookie", "Set-Cookie",
        "signature", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token",
        "X-Goog-Signature", "sig", "GCP_CREDENTIALS",
    ],
)  # fmt: skip
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "LOG_LEVEL", "x-tenant", "MODEL", "BASE_URL", "DEBUG", "page", "prompt_tokens",
        "max_tokens", "tokens", "keyword", "keyboard", "monkey", "author", "AUTHOR_NAME",
        "signal", "Accept", "Content-Type", "user",
    ],
)  # fmt: skip
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_declared_secrets_are_masked_wherever_they_occur() -> None:
    redactor = Redactor(["s3cr3t-value", "", "   "])
    assert redactor.text("key=s3cr3t-value; again s3cr3t-value.") == "key=***; again ***."
    assert redactor.text("nothing here") == "nothing here"


def test_values_shorter_than_the_minimum_are_never_masked_in_text() -> None:
    redactor = Redactor(["1", "debug", "abcde"])
    text = "switch from debug to production took 10 ms (abcde)"
    assert redactor.text(text) == text


def test_the_longest_secret_wins_when_secrets_overlap() -> None:
    redactor = Redactor(["abcdef", "abcdefghij"])
    assert redactor.text("xabcdefghijx abcdef") == "x***x ***"


def test_a_bearer_header_value_also_masks_the_bare_token() -> None:
    redactor = Redactor(["Bearer tok-123456"])
    assert redactor.text("sent tok-123456") == "sent ***"


def test_strings_are_masked_recursively_and_nothing_else_is_touched() -> None:
    redactor = Redactor(["hunter22"])
    value = {
        "args": ["pw is hunter22", {"deep": ("hunter22",)}],
        "count": 3,
        "flag": True,
        "token": "a word, not a secret",
        "usage": {"prompt_tokens": 10},
    }
    assert redactor.value(value) == {
        "args": ["pw is ***", {"deep": ["***"]}],
        "count": 3,
        "flag": True,
        "token": "a word, not a secret",
        "usage": {"prompt_tokens": 10},
    }


@pytest.mark.parametrize(
    "param", ["access_token", "apiToken", "accessToken", "clientSecret", "signature",
              "X-Amz-Signature", "sig", "key", "api-key", "password"],
)  # fmt: skip
def test_secret_query_parameters_are_masked_in_any_text(param: str) -> None:
    text = f"GET https://h.test/mcp?page=2&{param}=abc123XYZ&x=1 failed"
    assert Redactor().text(text) == f"GET https://h.test/mcp?page=2&{param}=***&x=1 failed"


def test_userinfo_passwords_are_masked_in_any_text_whatever_their_length() -> None:
    text = "connect https://alice:pw@example.test/mcp now"
    assert Redactor().text(text) == "connect https://alice:***@example.test/mcp now"


def test_a_url_declares_its_credentials_with_their_wire_forms() -> None:
    found = url_credentials("https://alice:p%40ss-word@h.test/x?apiToken=tok-1234567&page=2")
    basic = base64.b64encode(b"alice:p@ss-word").decode()
    assert set(found) == {"p%40ss-word", "p@ss-word", basic, "tok-1234567"}
    redactor = Redactor(found)
    assert redactor.text(f"Authorization: Basic {basic}") == "Authorization: Basic ***"


def test_a_declared_url_masks_the_basic_credential_derived_from_it() -> None:
    redactor = Redactor(["http://bob:hunter2-long@127.0.0.1:9/mcp"])
    basic = base64.b64encode(b"bob:hunter2-long").decode()
    assert redactor.text(f"echo {basic}") == "echo ***"


def test_values_of_secret_flags_on_a_command_line() -> None:
    args = ["server.py", "--token", "tok-abcdef", "--api-key=sk-123456", "--port", "8001", "-v"]
    assert flag_secrets(args) == ["tok-abcdef", "sk-123456"]


def test_previews_mask_before_they_cut() -> None:
    redactor = Redactor(["sk-0123456789abcdef"])
    text = "x" * 30 + "sk-0123456789abcdef"
    shown = redactor.preview(text, 40)
    assert "sk-0" not in shown and shown.startswith("x" * 30 + "***")
    with masking(redactor):
        assert preview(text + "tail", 34) == "x" * 30 + "*..."
    assert "sk-012" in preview(text, 40)  # no redactor active: nothing declared to mask


def test_spans_merge_overlapping_matches() -> None:
    redactor = Redactor(["abc123XYZ-long"])
    text = "http://h/?token=abc123XYZ-long"
    assert redactor.text(text) == "http://h/?token=***"
