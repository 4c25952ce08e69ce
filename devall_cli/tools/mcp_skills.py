"""Skills served by MCP servers (the `io.modelcontextprotocol/skills` extension).

A server that declares the extension lists its skills with `skills/list`: each entry names the
skill's SKILL.md (`uri`), carries its front matter (`frontmatter`, with `name` and
`description`) and the manifest of its files (`resources`: `{uri, digest, size}` each, SKILL.md
included). Listing reads no file. A file is read (`resources/read`) only when it is asked for,
and checked before anything uses it: its byte length against `size`, its SHA-256 against
`digest`, and for SKILL.md its YAML front matter against the listed one, field by field. A file
that fails is refused (SkillVerificationError) and its content is dropped. A skill whose entry
lists no manifest (`resources: "dynamic"`) cannot be checked, so its files are refused too.

The requests go raw through the source's session (`McpSessionSource.on_session`), whichever
client speaks it: the extension's methods are not in the clients' typed surface.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from devall_cli.errors import DevallError, ExitCode, ProtocolError, UsageError

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SKILL_FILE = "SKILL.md"
MAX_PAGES = 100  # a server whose cursor never ends stops here
METHOD_NOT_FOUND = -32601


class SkillVerificationError(DevallError):
    """A skill file the server sent does not match its listing; its content is not used."""

    exit_code = ExitCode.FAILED


@dataclass(frozen=True)
class SkillFile:
    """One file of a served skill, as its listing describes it."""

    uri: str
    digest: str
    size: int
    path: str  # relative to the skill's folder: SKILL.md, references/FORMS.md


@dataclass(frozen=True)
class ServedSkill:
    """One skill a server lists."""

    server: str  # the source id
    uri: str  # its SKILL.md
    name: str
    description: str
    frontmatter: Mapping[str, Any] = field(default_factory=dict)
    files: tuple[SkillFile, ...] | None = None  # None: no manifest (`dynamic`)

    @property
    def allowed_tools(self) -> tuple[str, ...]:
        """The tools its front matter's `allowed-tools` names."""
        value = self.frontmatter.get("allowed-tools")
        if isinstance(value, str):
            return tuple(value.split())
        if isinstance(value, list):
            return tuple(str(v).strip() for v in value if str(v).strip())
        return ()

    def file(self, path: str) -> SkillFile | None:
        """The listed file at `path` (relative to the skill's folder), or None."""
        wanted = path.strip().lstrip("./") or SKILL_FILE
        return next((f for f in self.files or () if f.path == wanted), None)


def offers_skills(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a server's declared capabilities include the skills extension."""
    extensions = (capabilities or {}).get("extensions")
    return isinstance(extensions, Mapping) and extensions.get(SKILLS_EXTENSION) is not None


async def list_skills(source: Any, server: str) -> list[ServedSkill] | None:
    """Every skill `source` lists (all pages); None when it does not declare the extension."""
    if not offers_skills(await source.on_session(_capabilities)):
        return None
    skills: list[ServedSkill] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await _request(source, server, "skills/list", {"cursor": cursor} if cursor else {})
        entries = page.get("skills")
        if not isinstance(entries, list):
            raise ProtocolError(f"{source.server}: skills/list answered no `skills` list")
        skills += [_entry(source, server, item) for item in entries]
        cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
        if not cursor:
            break
    return skills


async def read_file(source: Any, skill: ServedSkill, file: SkillFile) -> str:
    """The text of one listed file, verified against the listing (SkillVerificationError)."""
    where = f"{source.server}: skill '{skill.name}': {file.path}"
    result = await _request(source, skill.server, "resources/read", {"uri": file.uri})
    data = _content_bytes(result, file.uri, where)
    if len(data) != file.size:
        raise SkillVerificationError(
            f"{where} failed verification: {len(data)} bytes, the listing says {file.size}; "
            "its content is not used"
        )
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != file.digest:
        raise SkillVerificationError(
            f"{where} failed verification: its digest is {digest}, the listing says "
            f"{file.digest}; its content is not used"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillVerificationError(f"{where} is not UTF-8 text; it is not used") from exc
    if file.path == SKILL_FILE:
        _check_frontmatter(text, skill, where)
    return text


async def read_skill_file(source: Any, skill: ServedSkill, path: str = SKILL_FILE) -> str:
    """`read_file` of the file at `path`; an unlisted path (UsageError) or a skill without a
    manifest is refused before anything is read."""
    if skill.files is None:
        raise SkillVerificationError(
            f"{source.server}: skill '{skill.name}' lists no file manifest (dynamic), so its "
            "files cannot be verified; they are not read"
        )
    file = skill.file(path)
    if file is None:
        listed = ", ".join(f.path for f in skill.files) or "none"
        raise UsageError(
            f"{source.server}: skill '{skill.name}' lists no file '{path}' (files: {listed})"
        )
    return await read_file(source, skill, file)


# --- the wire ---------------------------------------------------------------------------------


async def _request(source: Any, server: str, method: str, params: dict[str, Any]) -> Any:
    from devall_cli.tools import mcp_errors

    async def send(session: Any) -> Any:
        return await _raw(session, method, params)

    try:
        result = await source.on_session(send)
    except Exception as exc:
        if not mcp_errors.is_server_answer(exc):
            raise
        from devall_cli.tools.mcp_extras import RequestRefusedError

        message = getattr(exc, "message", None) or str(exc)
        raise RequestRefusedError(f"{source.server}: {method} failed: {message}") from exc
    if not isinstance(result, Mapping):
        raise ProtocolError(f"{source.server}: {method} answered {type(result).__name__}")
    return result


async def _raw(session: Any, method: str, params: dict[str, Any]) -> Any:
    """One request on either client, its result as the server sent it."""
    rpc = getattr(session, "rpc", None)
    if rpc is not None:  # devall's direct client speaks raw requests itself
        return await rpc(method, params)
    sdk = session.client.session  # fastmcp's: stamped as the SDK stamps its own requests
    data: dict[str, Any] = {"method": method, "params": dict(params)}
    opts: dict[str, Any] = {}
    sdk._stamp(data, opts)
    return await sdk._dispatcher.send_raw_request(method, data["params"], opts)


async def _capabilities(session: Any) -> Mapping[str, Any]:
    declared = getattr(session, "capabilities", None)
    if isinstance(declared, Mapping):  # the direct client keeps them as sent
        return declared
    caps = session.client.server_capabilities
    return caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps else {}


def _entry(source: Any, server: str, item: Any) -> ServedSkill:
    if not isinstance(item, Mapping) or not isinstance(item.get("uri"), str):
        raise ProtocolError(f"{source.server}: skills/list gave an entry without a uri")
    uri = item["uri"]
    front = item.get("frontmatter")
    front = dict(front) if isinstance(front, Mapping) else {}
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not name.strip():
        raise ProtocolError(f"{source.server}: skills/list entry {uri} has no frontmatter.name")
    folder = uri[: -len(SKILL_FILE)] if uri.endswith("/" + SKILL_FILE) else uri.rsplit("/", 1)[0]
    files = _manifest(source, uri, folder, item.get("resources"))
    text = description.strip() if isinstance(description, str) else ""
    return ServedSkill(server, uri, name.strip(), text, front, files)


def _manifest(source: Any, uri: str, folder: str, raw: Any) -> tuple[SkillFile, ...] | None:
    if not isinstance(raw, list):
        return None
    files: list[SkillFile] = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("uri"), str):
            raise ProtocolError(f"{source.server}: skill {uri} lists a file without a uri")
        file_uri, digest, size = item["uri"], item.get("digest"), item.get("size")
        if not isinstance(digest, str) or not isinstance(size, int) or isinstance(size, bool):
            raise ProtocolError(f"{source.server}: skill file {file_uri} has no digest or size")
        path = SKILL_FILE if file_uri == uri else file_uri.removeprefix(folder)
        files.append(SkillFile(file_uri, digest, size, path))
    return tuple(files)


def _content_bytes(result: Mapping[str, Any], uri: str, where: str) -> bytes:
    contents = [c for c in result.get("contents") or [] if isinstance(c, Mapping)]
    if len(contents) != 1:
        raise SkillVerificationError(
            f"{where} failed verification: resources/read answered {len(contents)} contents, "
            "not one; it is not used"
        )
    content = contents[0]
    if isinstance(content.get("text"), str):
        return str(content["text"]).encode("utf-8")
    try:
        return base64.b64decode(str(content.get("blob") or ""), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SkillVerificationError(f"{where}: its content is not valid base64") from exc


def _check_frontmatter(text: str, skill: ServedSkill, where: str) -> None:
    """SKILL.md's front matter must be the listed one, field by field."""
    from devall_cli.skills.discovery import SkillError, parse_frontmatter

    try:
        front = parse_frontmatter(text, where)
    except SkillError as exc:
        raise SkillVerificationError(f"{exc}; it is not used") from exc
    listed = skill.frontmatter
    differ = sorted(key for key in {*front, *listed} if front.get(key) != listed.get(key))
    if differ:
        raise SkillVerificationError(
            f"{where} failed verification: its front matter differs from the listing in "
            f"{', '.join(differ)}; its content is not used"
        )
