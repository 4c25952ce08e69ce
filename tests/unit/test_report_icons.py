"""Which tool icon the report shows: a `data:` image of a safe type, never a URL to fetch."""

from __future__ import annotations

from typing import Any

import pytest

from devall_cli.report.icons import shown_icon

PNG = "data:image/png;base64,iVBORw0KGgo="
SVG = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"


@pytest.mark.parametrize(
    ("icons", "shown"),
    [
        ([{"src": "https://icons.example/a.png"}, {"src": PNG}], PNG),  # the URL is skipped
        ([{"src": SVG, "theme": "dark"}, {"src": PNG, "theme": "light"}], PNG),  # the page is light
        ([{"src": SVG, "theme": "dark"}], SVG),  # better a dark icon than none
        ([{"src": "data:text/html,<script>alert(1)</script>"}], None),
        ([{"src": "http://icons.example/a.png"}, {"src": 3}, "junk"], None),
        (None, None),
    ],
)
def test_only_a_data_image_is_shown(icons: Any, shown: str | None) -> None:
    assert shown_icon(icons) == shown
