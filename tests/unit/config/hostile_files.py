"""Hostile workflow files, written at test time (some are large, binary, or bombs).

Each case writes its file into a folder and says where the error must point (line and column,
or None when only the file can be named) and a part of its message. Shared by the loader tests
and the `devall validate` tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from devall_cli.config.yaml_source import MAX_FILE_BYTES, MAX_LINE_CHARS

GRAPH = "graph:\n  start: a\n  nodes: [{id: a, type: passthrough}]\n"


@dataclass(frozen=True)
class HostileCase:
    """One kind of bad input and the located error devall must answer with."""

    name: str
    write: Callable[[Path], Path]
    where: tuple[int, int] | None  # line and column of the error, None: the file as a whole
    message: str


def _text(name: str, text: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


def _bytes(name: str, data: bytes) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return write


def alias_bomb(levels: int = 30, fan_out: int = 10) -> str:
    """Billion laughs: each anchor is a list of `fan_out` aliases to the previous one."""
    lines = ["vars:", "  L0: &L0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        items = ", ".join([f"*L{level - 1}"] * fan_out)
        lines.append(f"  L{level}: &L{level} [{items}]")
    return "\n".join(lines) + "\n" + GRAPH


def placeholder_bomb(levels: int = 12) -> str:
    """The same attack through `vars`: each entry lists ten whole-value references to the last."""
    lines = ["vars:", "  P0: [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"  P{level}: [" + ", ".join([f"'${{P{level - 1}}}'"] * 10) + "]")
    return "\n".join(lines) + "\n" + GRAPH


def text_bomb(levels: int = 12) -> str:
    """Ten references per level inside one string: a few bytes that spell gigabytes of text."""
    lines = ["vars:", "  T0: lololololololololol"]
    for level in range(1, levels):
        lines.append(f"  T{level}: '" + f"${{T{level - 1}}}" * 10 + "'")
    return "\n".join(lines) + "\n" + GRAPH


def merge_chain(length: int = 150) -> str:
    """Each mapping merges the one before it: a chain of `<<` far deeper than any nesting."""
    lines = ["chain:", "  m0: &m0 {k: 0}"]
    lines += [f"  m{i}: &m{i} {{<<: *m{i - 1}, k{i}: {i}}}" for i in range(1, length)]
    return "\n".join(lines) + "\n" + GRAPH


def _sparse(size: int) -> Callable[[Path], Path]:
    """A file of `size` bytes that takes no disk space: reading it all would be slow."""

    def write(folder: Path) -> Path:
        path = folder / "huge.yaml"
        with path.open("wb") as handle:
            handle.write(b"graph:\n  start: a\n")
            handle.truncate(size)
        return path

    return write


def _missing(folder: Path) -> Path:
    return folder / "nowhere.yaml"


def _directory(folder: Path) -> Path:
    (folder / "flows.yaml").mkdir()
    return folder / "flows.yaml"


BINARY = bytes(range(256)) * 40  # starts with NUL; holds every control byte and invalid UTF-8
LONG_VALUE = "x" * MAX_LINE_CHARS

CASES = [
    HostileCase(
        "syntax_error",
        _text("f.yaml", "graph:\n  start: [a, b\n  nodes: x\n"),
        (3, 8),
        "invalid YAML",
    ),
    HostileCase(
        "tab_indentation",
        _text("f.yaml", "graph:\n\tstart: a\n"),
        (2, 1),
        "tab characters are not allowed",
    ),
    HostileCase(
        "duplicate_key",
        _text("f.yaml", GRAPH + "  start: b\n"),
        (4, 3),
        'duplicate key "start" (first written at line 2)',
    ),
    HostileCase(
        "alias_bomb", _text("f.yaml", alias_bomb()), (6, 27), "would expand the document beyond"
    ),
    HostileCase(
        "recursive_alias",
        _text("f.yaml", "vars:\n  loop: &loop [a, *loop]\n" + GRAPH),
        (2, 19),
        "alias *loop refers to a collection that contains it",
    ),
    HostileCase(
        "file_over_10_mb",
        _sparse(MAX_FILE_BYTES + 1),
        None,
        f"the file is too large: {MAX_FILE_BYTES + 1} bytes",
    ),
    HostileCase(
        "file_of_a_terabyte", _sparse(2**40), None, f"the file is too large: {2**40} bytes"
    ),
    HostileCase(
        "not_utf8",
        _bytes("f.yaml", b"graph:\n  id: caf\xe9\n"),
        (2, 10),
        "not valid UTF-8 (byte 0xe9 at byte offset 16)",
    ),
    HostileCase(
        "binary_garbage",
        _bytes("f.yaml", BINARY),
        (1, 1),
        "binary data (a NUL byte at byte offset 0)",
    ),
    HostileCase(
        "nul_inside_text",
        _bytes("f.yaml", b"graph:\n  id: a\x00b\n"),
        (2, 8),
        "a NUL byte at byte offset 14",
    ),
    HostileCase(
        "control_characters",
        _bytes("f.yaml", b'graph:\n  id: "\x1b[2J"\n'),
        (2, 8),
        "control character U+001B at byte offset 14",
    ),
    HostileCase("missing_file", _missing, None, "no such file"),
    HostileCase("directory", _directory, None, "is a directory"),
    HostileCase(
        "deep_flow_lists",
        _text("f.yaml", "graph: " + "[" * 10_000 + "]" * 10_000 + "\n"),
        (1, 108),
        "nested more than 100 levels deep",
    ),
    HostileCase(
        "deep_flow_mappings",
        _text("f.yaml", "graph: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n"),
        (1, 404),
        "nested more than 100 levels deep",
    ),
    HostileCase(
        "deep_block_mappings",
        _text("f.yaml", "".join(" " * i + f"k{i}:\n" for i in range(2_000))),
        (101, 101),
        "nested more than 100 levels deep",
    ),
    HostileCase(
        "deep_block_lists",
        _text("f.yaml", "- " * 10_000 + "x\n"),
        (1, 201),
        "nested more than 100 levels deep",
    ),
    HostileCase(
        "very_long_line",
        _text("f.yaml", GRAPH + f"  description: {LONG_VALUE}\n"),
        (4, MAX_LINE_CHARS + 1),
        f"line 4 is {MAX_LINE_CHARS + 15} characters long",
    ),
    HostileCase(
        "top_level_list", _text("f.yaml", "- graph: {}\n"), (1, 1), "top level must be a mapping"
    ),
    HostileCase(
        "top_level_scalar", _text("f.yaml", "\n\nworkflow\n"), (3, 1), "top level must be a mapping"
    ),
    HostileCase("empty", _text("f.yaml", "# nothing here\n\n"), None, "the workflow file is empty"),
    HostileCase(
        "placeholder_list_bomb",
        _text("f.yaml", placeholder_bomb()),
        (6, 71),
        "placeholders expand the workflow beyond 100000 values",
    ),
    HostileCase(
        "placeholder_text_bomb",
        _text("f.yaml", text_bomb()),
        (8, 7),
        "placeholders expand the workflow beyond 10000000 characters",
    ),
    HostileCase(
        "merge_key_chain",
        _text("f.yaml", merge_chain()),
        (103, 9),
        "merge keys (<<) are chained more than 100 levels deep",
    ),
    HostileCase(
        "huge_integer",
        _text("f.yaml", GRAPH + "  timeout: 0x" + "f" * 300 + "\n"),
        (4, 12),
        "the number is too large",
    ),
]


# --- mutated workflows for the fuzz tests ----------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED_FILES = sorted(
    [*(REPO_ROOT / "workflows").glob("*.yaml"), *(REPO_ROOT / "tests/data/invalid").glob("*.yaml")]
)
SEEDS = {path.name: path.read_bytes() for path in SEED_FILES}
# Bytes that YAML, our limits or the placeholder parser give a meaning to.
FRAGMENTS = [
    *(b"&a ", b"*a", b"<<: *a", b"[", b"]", b"{", b"}", b"? ", b": ", b"- ", b", ", b"|\n"),
    *(b"\t", b"---\n", b"...\n", b"#", b"'", b'"', b'"\\e[2J', b"\r", b"\n", b"\xef\xbb\xbf"),
    *(b"${", b"${A:-", b"$${", b"${MODEL}", b"}", b"${API_KEY}", b"${A:-${B:-x}}"),
    *(
        b"\x00",
        b"\xff",
        b"\xe9",
        b"\x1b",
        b"\x7f",
        b"\xc2\x85",
        b"\xe2\x80\xa8",
        b"\xf0\x9f\x98\x80",
    ),
    *(b"!!int ", b"!!bool ", b"!!binary ", b"!!set ", b"!!omap ", b"!!timestamp ", b"!custom "),
    *(b"~", b".nan", b"-.inf", b"1e999", b"0x" + b"f" * 300, b"9" * 5000, b"2001-12-14"),
    *(b"%YAML 1.1\n", b"%TAG !e! tag:x,2000:\n", b"<<: [*a, *a]", b"&a [*a]", b"x" * 200),
]


@st.composite
def mutated_files(draw: st.DrawFn) -> bytes:
    """A workflow of the repository or of the invalid corpus, with bytes and lines mutated."""
    data = SEEDS[draw(st.sampled_from(sorted(SEEDS)))]
    for _ in range(draw(st.integers(1, 4))):
        data = draw(st.sampled_from(_MUTATIONS))(draw, data)
    return data


def _insert(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    return data[:at] + draw(st.sampled_from(FRAGMENTS)) + data[at:]


def _delete(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    return data[:at] + data[at + draw(st.integers(1, 40)) :]


def _flip(draw: st.DrawFn, data: bytes) -> bytes:
    if not data:
        return data
    at = draw(st.integers(0, len(data) - 1))
    return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]


def _lines(draw: st.DrawFn, data: bytes) -> bytes:
    lines = data.split(b"\n")
    at = draw(st.integers(0, len(lines) - 1))
    other = draw(st.integers(0, len(lines) - 1))
    action = draw(st.sampled_from(["drop", "repeat", "swap", "indent", "dedent", "tab"]))
    if action == "drop":
        del lines[at]
    elif action == "repeat":
        lines[at:at] = [lines[at]] * draw(st.integers(1, 30))
    elif action == "swap":
        lines[at], lines[other] = lines[other], lines[at]
    elif action == "indent":
        lines[at] = b"  " + lines[at]
    elif action == "dedent":
        lines[at] = lines[at].lstrip(b" ")
    else:
        lines[at] = b"\t" + lines[at].lstrip(b" ")
    return b"\n".join(lines)


_MUTATIONS = [_insert, _insert, _delete, _flip, _lines, _lines]
