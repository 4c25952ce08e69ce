"""The report of a run with parallel branches, a loop, a picture and a sound
(workflows/examples/report_showcase.yaml): read as HTML, and opened in a real headless Chromium
(Debian's, driven by Playwright; `make test` installs it when it is missing)."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.cli.flows import invoke
from tests.cli.test_report_cli import node_ids, page, status_of
from tests.conftest import REPO_ROOT

SHOWCASE = REPO_ROOT / "workflows" / "examples" / "report_showcase.yaml"
NODES = ["illustrator", "recorder", "writer", "editor", "publish"]
FINAL = "Draft 2: Greetings from the sea! Blue water. Waves humming in A."
# Chromium on a machine without network or desktop: no background connections, no GPU.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def showcase(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The run directory of one showcase run, made with `devall run --report`."""
    run_dir = tmp_path_factory.mktemp("showcase") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NO_COLOR", "1")
        patch.setenv("FASTMCP_SHOW_SERVER_BANNER", "false")
        patch.setenv("FASTMCP_CHECK_FOR_UPDATES", "off")
        code, out, err = invoke(
            "run",
            str(SHOWCASE),
            "--var",
            f"PYTHON={sys.executable}",
            "--task",
            "a postcard from the sea",
            "--out",
            str(run_dir),
            "--report",
        )
    assert code == 0, err
    assert out == FINAL + "\n"
    assert f"report: {run_dir / 'report.html'}" in err
    yield run_dir


def test_showcase_report_shows_branches_loop_and_attachments(showcase: Path) -> None:
    code, out, err = invoke("validate", str(SHOWCASE))
    assert code == 0 and "is valid" in out, err
    html = page(showcase / "report.html")
    assert '<body class="run-ok">' in html
    assert node_ids(html) == NODES
    assert all(status_of(html, node) == "ok" for node in NODES)
    assert FINAL in unescape(html)
    # The loop: writer and editor ran twice, and the edge closing the loop is drawn as one.
    assert html.count('class="edge back') >= 1
    assert re.search(r"writer</b>\s*<span class=\"muted\">agent · 2 visits", html)
    # Both branches side by side: the two tool calls overlap in time.
    bars = re.findall(r'<span class="bar tool[^"]*" style="left:([\d.]+)%;width:([\d.]+)%', html)
    assert len(bars) >= 2
    (a_left, a_width), (b_left, b_width) = [(float(x), float(w)) for x, w in bars[:2]]
    assert a_left < b_left + b_width and b_left < a_left + a_width
    # The picture and the sound, embedded, with size and sha256.
    assert re.search(r'<img [^>]*src="data:image/png;base64,', html)
    assert re.search(r'<audio [^>]*src="data:audio/wav;base64,', html)
    assert "sample_image_image_1.png" in html and "sha256" in html


def chromium() -> str:
    """Debian's Chromium, or a skip saying why there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "no chromium on PATH: `make test` installs Debian's chromium with apt-get "
            "(as root); install it to run the report's browser test"
        )
    return found


def stays_local(url: str) -> bool:
    """A URL that does not leave the machine."""
    return url.startswith(("file://", "data:", "about:", "blob:")) or bool(
        re.match(r"https?://(127\.0\.0\.1|localhost)[:/]", url)
    )


def distinct_colours(browser: Any, png: bytes) -> int:
    """How many colours a PNG has (counted by the browser, on a canvas)."""
    import base64

    scratch = browser.new_page()
    try:
        uri = "data:image/png;base64," + base64.b64encode(png).decode()
        count: int = scratch.evaluate(
            """async (uri) => {
                const img = new Image(); img.src = uri; await img.decode();
                const canvas = document.createElement("canvas");
                canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
                const ctx = canvas.getContext("2d"); ctx.drawImage(img, 0, 0);
                const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
                const seen = new Set();
                for (let i = 0; i < data.length; i += 4 * 7) {
                    seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
                }
                return seen.size;
            }""",
            uri,
        )
    finally:
        scratch.close()
    return count


def test_report_in_headless_chromium(showcase: Path, tmp_path: Path) -> None:
    executable = chromium()
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'"
    )
    requests: list[str] = []
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.on("request", lambda request: requests.append(request.url))
            context.route(
                "**/*",
                lambda route: (
                    route.continue_() if stays_local(route.request.url) else route.abort()
                ),
            )
            tab = context.new_page()
            tab.goto((showcase / "report.html").as_uri())
            tab.wait_for_selector("html[data-ready='1']")  # the page's script has run
            tab.wait_for_function("() => [...document.images].every((img) => img.complete)")
            shot = tab.screenshot()
            (tmp_path / "report.png").write_bytes(shot)
            assert distinct_colours(browser, shot) > 20  # not a blank page

            text = tab.evaluate("() => document.body.textContent")
            for node in NODES:
                assert tab.locator(f'#graph [data-node="{node}"]').count() == 1
                assert node in text
            assert tab.locator("#output pre").inner_text().strip() == FINAL
            images = tab.evaluate(
                "() => [...document.images].map((i) => [i.src.slice(0, 22), i.naturalWidth])"
            )
            assert any(src.startswith("data:image/png") and w > 0 for src, w in images), images
            duration = tab.evaluate(
                """() => new Promise((done) => {
                    const audio = document.querySelector("audio");
                    if (audio.readyState >= 1) { done(audio.duration); return; }
                    audio.addEventListener("loadedmetadata", () => done(audio.duration));
                    audio.addEventListener("error", () => done(-1));
                    audio.load();
                })"""
            )
            assert duration > 0  # the sound is playable

            # A link from the graph opens the node's section.
            tab.locator('#graph a[href^="#node-"]').first.click()
            assert tab.evaluate("() => document.querySelector(location.hash).open") is True

            # At phone width nothing runs off the side of the page.
            tab.set_viewport_size({"width": 390, "height": 844})
            width = tab.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 391, width
        finally:
            browser.close()
    assert requests, "the browser recorded no request at all"
    assert all(stays_local(url) for url in requests), [u for u in requests if not stays_local(u)]
