"""The OAuth parts that need no server: the token cache, the loopback redirect, person waits."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import httpx
import pytest

from devall_cli.errors import AuthError, UsageError
from devall_cli.tools.oauth_cache import TokenCache, cache_root
from devall_cli.tools.oauth_redirect import (
    LoopbackRedirect,
    RedirectSettings,
    code_result,
    free_port,
)
from devall_cli.tools.person_wait import PersonWaits

# --- the token cache -------------------------------------------------------------------------


def test_cache_root_follows_the_environment(tmp_path: Path) -> None:
    assert cache_root({"DEVALL_OAUTH_CACHE": str(tmp_path / "c")}) == tmp_path / "c"
    xdg = {"XDG_CACHE_HOME": str(tmp_path)}
    assert cache_root(xdg) == tmp_path / "devall" / "oauth"
    assert cache_root({}).parts[-3:] == (".cache", "devall", "oauth")


def test_entries_are_private_whole_files(tmp_path: Path) -> None:
    os.umask(0o022)
    cache = TokenCache(tmp_path / "oauth")
    entry = cache.entry(
        "k", server="https://a.test/mcp", grant="authorization_code", client_id=None
    )
    entry.update(tokens={"access_token": "at-1", "refresh_token": "rt-1", "scope": "x"})
    assert stat.S_IMODE(entry.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.root.stat().st_mode) == 0o700
    assert [p.name for p in cache.root.iterdir()] == [entry.path.name]  # no temporary left
    assert entry.load()["tokens"]["access_token"] == "at-1"
    (login,) = cache.logins()
    assert (login.server, login.scopes, login.refreshable) == ("https://a.test/mcp", "x", True)
    entry.forget_tokens()
    assert "tokens" not in entry.load() and entry.load()["server"] == "https://a.test/mcp"
    assert entry.remove() and not entry.remove()


def test_a_loose_cache_folder_is_tightened(tmp_path: Path) -> None:
    root = tmp_path / "oauth"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    entry = TokenCache(root).entry("k", server="s", grant="g", client_id=None)
    entry.update(tokens={"access_token": "a"})
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_unreadable_or_foreign_files_count_as_empty(tmp_path: Path) -> None:
    cache = TokenCache(tmp_path)
    entry = cache.entry("k", server="https://a.test/mcp", grant="g", client_id=None)
    entry.path.write_text("{not json")
    assert entry.load() == {}
    entry.path.write_text('{"a":' * 10000 + "1" + "}" * 10000)  # too deep to read
    assert entry.load() == {}
    entry.path.write_text(json.dumps({"version": 1, "server": "https://other.test/mcp"}))
    assert entry.load() == {}
    entry.update(tokens={"access_token": "a"})  # rewritten whole
    assert entry.load()["tokens"] == {"access_token": "a"}


def test_entries_differ_by_key(tmp_path: Path) -> None:
    cache = TokenCache(tmp_path)
    a = cache.entry("server\ncode\n", server="s", grant="code", client_id=None)
    b = cache.entry("server\ncode\nclient", server="s", grant="code", client_id="client")
    assert a.path != b.path


# --- the loopback redirect -----------------------------------------------------------------------


def test_settings_from_the_environment() -> None:
    assert RedirectSettings.from_env({}) == RedirectSettings("browser", 300.0)
    settings = RedirectSettings.from_env(
        {"DEVALL_OAUTH_BROWSER": "FETCH", "DEVALL_OAUTH_TIMEOUT": "5"}
    )
    assert settings == RedirectSettings("fetch", 5.0) and not settings.needs_person
    with pytest.raises(UsageError, match="DEVALL_OAUTH_BROWSER must be"):
        RedirectSettings.from_env({"DEVALL_OAUTH_BROWSER": "lynx"})
    for bad in ("soon", "0", "-3"):
        with pytest.raises(UsageError, match="DEVALL_OAUTH_TIMEOUT"):
            RedirectSettings.from_env({"DEVALL_OAUTH_TIMEOUT": bad})


def test_an_error_response_is_an_auth_error() -> None:
    with pytest.raises(AuthError, match="access_denied: no thanks"):
        code_result({"error": "access_denied", "error_description": "no thanks", "state": "s"})
    with pytest.raises(AuthError, match="no code"):
        code_result({"state": "s"})
    result = code_result({"code": "c", "state": "s", "iss": "https://as.test"})
    assert (result.code, result.state, result.iss) == ("c", "s", "https://as.test")


async def test_the_redirect_waits_for_the_browser_and_pauses_deadlines() -> None:
    """Mode `none`: the URL is shown; the person's browser comes back to the loopback URI."""
    waits = PersonWaits()
    shown: list[tuple[str, str]] = []
    port = free_port()
    redirect = LoopbackRedirect(
        port,
        RedirectSettings("none", 10.0),
        notify=lambda message, url: shown.append((message, url)),
        person=waits.person,
    )

    async def person() -> None:
        while not shown:
            await asyncio.sleep(0.01)
        assert waits.waiting
        await asyncio.sleep(0.3)  # longer than the deadline below: it must not fire
        async with httpx.AsyncClient() as client:
            stray = await client.get(f"http://127.0.0.1:{port}/favicon.ico")
            assert stray.status_code == 404
            # Another state (a forged link, a stale tab): refused, and devall keeps waiting.
            forged = await client.get(f"{redirect.uri}?code=forged&state=WRONG")
            assert forged.status_code == 400
            assert "devall is authorized" not in forged.text
            missing = await client.get(f"{redirect.uri}?error=access_denied")
            assert missing.status_code == 400
            page = await client.get(f"{redirect.uri}?code=the-code&state=st")
            assert "devall is authorized" in page.text

    await redirect.redirect_handler("https://as.test/authorize?x=1&state=st")
    helper = asyncio.create_task(person())
    async with waits.deadline(0.2):
        result = await redirect.callback_handler()
    await helper
    url = "https://as.test/authorize?x=1&state=st"
    assert shown == [("open this URL to authorize devall", url)]
    assert (result.code, result.state) == ("the-code", "st")
    assert not waits.waiting


async def test_nobody_coming_back_ends_the_wait() -> None:
    redirect = LoopbackRedirect(
        free_port(),
        RedirectSettings("none", 0.2),
        notify=lambda message, url: None,
        person=PersonWaits().person,
    )
    await redirect.redirect_handler("https://as.test/authorize")
    with pytest.raises(AuthError, match=r"no authorization within 0\.2s"):
        await redirect.callback_handler()


async def test_deadlines_still_fire_without_a_person() -> None:
    with pytest.raises(TimeoutError):
        async with PersonWaits().deadline(0.05):
            await asyncio.sleep(1)
