"""Each httpx exception the openai provider catches maps to a DevallError; helpers."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from devall_cli.errors import DevallError, LLMHTTPError, LLMUnreachableError
from devall_cli.providers.openai import (
    CAUGHT_HTTPX_ERRORS,
    completions_url,
    parse_retry_after,
    response_excerpt,
    safe_url,
    translate_httpx_error,
)
from devall_cli.redaction import Redactor

URL = "http://127.0.0.1:1/v1/chat/completions"


def httpx_exception_classes() -> list[type[Exception]]:
    """Every exception class httpx exports that `complete` catches."""
    return [
        obj
        for obj in vars(httpx).values()
        if isinstance(obj, type) and issubclass(obj, CAUGHT_HTTPX_ERRORS)
    ]


def make_exception(cls: type[Exception]) -> Exception:
    request = httpx.Request("POST", URL)
    if issubclass(cls, httpx.HTTPStatusError):
        return cls("boom", request=request, response=httpx.Response(502, request=request))
    if issubclass(cls, httpx.RequestError):
        return cls("boom", request=request)
    return cls("boom")


def test_the_catch_list_covers_every_request_error_httpx_exports() -> None:
    classes = httpx_exception_classes()
    assert httpx.ConnectError in classes and httpx.ReadTimeout in classes
    assert httpx.HTTPStatusError in classes and httpx.InvalidURL in classes
    exported = [
        o for o in vars(httpx).values() if isinstance(o, type) and issubclass(o, httpx.RequestError)
    ]
    assert set(exported) <= set(classes)


@pytest.mark.parametrize("cls", httpx_exception_classes(), ids=lambda c: c.__name__)
def test_each_caught_httpx_exception_maps_to_a_devall_error(cls: type[Exception]) -> None:
    error = translate_httpx_error(make_exception(cls), URL)

    assert isinstance(error, DevallError)
    assert isinstance(error, LLMUnreachableError | LLMHTTPError)
    assert URL in error.message


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (httpx.ConnectError, LLMUnreachableError),
        (httpx.ConnectTimeout, LLMUnreachableError),
        (httpx.ReadTimeout, LLMUnreachableError),
        (httpx.PoolTimeout, LLMUnreachableError),
        (httpx.ReadError, LLMUnreachableError),
        (httpx.RemoteProtocolError, LLMUnreachableError),
        (httpx.UnsupportedProtocol, LLMUnreachableError),
        (httpx.InvalidURL, LLMUnreachableError),
        (httpx.HTTPStatusError, LLMHTTPError),
        (httpx.DecodingError, LLMHTTPError),
        (httpx.TooManyRedirects, LLMHTTPError),
    ],
)
def test_exception_classes_map_to_the_expected_error(
    cls: type[Exception], expected: type[DevallError]
) -> None:
    assert type(translate_httpx_error(make_exception(cls), URL)) is expected


def test_status_errors_keep_the_status_and_attempts_are_counted() -> None:
    error = translate_httpx_error(make_exception(httpx.HTTPStatusError), URL, attempts=3)
    assert isinstance(error, LLMHTTPError) and error.status_code == 502
    assert "after 3 attempts" in error.message


def test_an_error_excerpt_is_masked_before_it_is_cut() -> None:
    key = "sk-secret-0123456789"
    body = ("x" * 190 + " " + key + " is not valid").encode()
    excerpt = response_excerpt(body, Redactor([key]))
    assert "sk-s" not in excerpt and len(excerpt) <= 200
    assert excerpt.startswith("x" * 190 + " ***")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        (" 2.5 ", 2.5),
        ("-4", 0.0),
        ("0", 0.0),
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
    ],
)
def test_retry_after_delta_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_retry_after_http_date() -> None:
    future = email.utils.formatdate(time.time() + 10, usegmt=True)
    past = email.utils.formatdate(time.time() - 100, usegmt=True)
    seconds = parse_retry_after(future)
    assert seconds is not None and 8 <= seconds <= 10.5
    assert parse_retry_after(past) == 0.0


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://api.example.com/v1", "https://api.example.com/v1/chat/completions"),
        ("https://api.example.com/v1/", "https://api.example.com/v1/chat/completions"),
        (
            "http://127.0.0.1:8000/v1?api-version=2",
            "http://127.0.0.1:8000/v1/chat/completions?api-version=2",
        ),
    ],
)
def test_completions_url(base: str, expected: str) -> None:
    assert completions_url(base) == expected


def test_safe_url_drops_userinfo_query_and_fragment() -> None:
    shown = safe_url("https://me:pw@llm.example.com:8443/v1/chat/completions?key=abc#frag")
    assert shown == "https://llm.example.com:8443/v1/chat/completions"
    assert safe_url("http://[::1]:80/v1") == "http://[::1]:80/v1"


def test_response_excerpt_prefers_the_api_message_and_stays_short() -> None:
    assert (
        response_excerpt(b'{"error": {"message": "Rate limit\\n reached"}}') == "Rate limit reached"
    )
    long = response_excerpt(b"x" * 5000)
    assert len(long) == 200 and long.endswith("\u2026")
    excerpt = response_excerpt(b"key sk-abcdef is wrong", Redactor(["sk-abcdef"]))
    assert excerpt == "key *** is wrong"
