"""Attachments in a report: embedded when they are images or audio inside the run directory and
unchanged, linked relative to the report otherwise, refused when they lead outside."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from devall_cli.report import attachments as module
from devall_cli.report.attachments import Attachments

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def record(path: str, data: bytes, mime: str) -> dict[str, object]:
    return {
        "path": path,
        "mime_type": mime,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run" / "attachments"
    folder.mkdir(parents=True)
    (folder / "pic.png").write_bytes(PNG)
    (folder / "notes.pdf").write_bytes(b"%PDF-1.4 report")
    return folder.parent


def test_images_are_embedded_and_other_files_linked(tmp_path: Path) -> None:
    run = run_dir(tmp_path)
    views = Attachments(run, run)
    image = views.view(record("attachments/pic.png", PNG, "image/png"))
    assert image.kind == "image" and image.data_uri is not None
    assert base64.b64decode(image.data_uri.split(",", 1)[1]) == PNG
    pdf = views.view(record("attachments/notes.pdf", b"%PDF-1.4 report", "application/pdf"))
    assert (pdf.kind, pdf.data_uri, pdf.href) == ("file", None, "attachments/notes.pdf")
    assert [v.path for v in views.all()] == ["attachments/pic.png", "attachments/notes.pdf"]


def test_links_are_relative_to_where_the_report_is(tmp_path: Path) -> None:
    run = run_dir(tmp_path)
    elsewhere = tmp_path / "pages" / "today"
    elsewhere.mkdir(parents=True)
    pdf = Attachments(run, elsewhere).view(
        record("attachments/notes.pdf", b"%PDF-1.4 report", "application/pdf")
    )
    assert pdf.href == "../../run/attachments/notes.pdf"


def test_a_changed_file_is_linked_not_shown(tmp_path: Path) -> None:
    run = run_dir(tmp_path)
    changed = record("attachments/pic.png", PNG, "image/png") | {"sha256": "0" * 64}
    view = Attachments(run, run).view(changed)
    assert view.data_uri is None and view.href and "sha256 differs" in view.note


def test_paths_leading_outside_the_run_directory_are_refused(tmp_path: Path) -> None:
    run = run_dir(tmp_path)
    secret = tmp_path / "secret.png"
    secret.write_bytes(PNG)
    (run / "attachments" / "link.png").symlink_to(secret)
    views = Attachments(run, run)
    for path in ("../secret.png", str(secret), "attachments/link.png"):
        view = views.view(record(path, PNG, "image/png"))
        assert view.data_uri is None and view.href is None, path
        assert "outside the run directory" in view.note
    missing = views.view(record("attachments/gone.png", PNG, "image/png"))
    assert missing.note == "missing from the run directory"


def test_embedding_stops_at_the_report_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_dir(tmp_path)
    monkeypatch.setattr(module, "EMBED_TOTAL", len(PNG) + 10)
    (run / "attachments" / "second.png").write_bytes(PNG)
    views = Attachments(run, run)
    first = views.view(record("attachments/pic.png", PNG, "image/png"))
    second = views.view(record("attachments/second.png", PNG, "image/png"))
    assert first.data_uri is not None
    assert second.data_uri is None and second.href == "attachments/second.png"
    assert "too large" in second.note
