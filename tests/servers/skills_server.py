"""A stdio MCP server serving one skill through the skills extension, written by hand (no SDK).

It speaks 2026-07-28 (`server/discover`, declaring `resources` and the
`io.modelcontextprotocol/skills` extension) and the `initialize` handshake. `skills/list` lists
the skill `pdf-forms` (skill://pdf-forms/SKILL.md and references/FIELDS.md, each with its
digest and size); `resources/read` serves them. One tool, `fill {field}`, answers `filled`.

    --tamper     serves a SKILL.md whose bytes differ from the listed digest (same size)
    --log PATH   appends one JSON line per request: {"method", "uri"} (uri of a resources/read)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

EXTENSION = "io.modelcontextprotocol/skills"
COMPLETE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
SKILL_URI = "skill://pdf-forms/SKILL.md"
FIELDS_URI = "skill://pdf-forms/references/FIELDS.md"
SKILL_MD = (
    "---\nname: pdf-forms\ndescription: Fill PDF forms field by field\n---\n"
    "Read references/FIELDS.md, then call fill once per field.\n"
)
FIELDS_MD = "Fields: name, date.\n"
CAPABILITIES = {"tools": {}, "resources": {}, "extensions": {EXTENSION: {}}}
INFO = {"name": "skills server", "version": "1"}
TOOLS = [
    {
        "name": "fill",
        "description": "Fill one form field.",
        "inputSchema": {"type": "object", "properties": {"field": {"type": "string"}}},
    }
]


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def entry() -> dict[str, Any]:
    files = [(SKILL_URI, SKILL_MD), (FIELDS_URI, FIELDS_MD)]
    return {
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-forms", "description": "Fill PDF forms field by field"},
        "resources": [
            {"uri": uri, "digest": digest(text), "size": len(text.encode())} for uri, text in files
        ],
    }


def answer(method: str, params: dict[str, Any], tamper: bool) -> dict[str, Any]:
    if method == "server/discover":
        meta = {"io.modelcontextprotocol/serverInfo": INFO}
        return {"supportedVersions": ["2026-07-28"], "capabilities": CAPABILITIES,
                "_meta": meta, **COMPLETE}  # fmt: skip
    if method == "initialize":
        return {"protocolVersion": "2025-11-25", "capabilities": CAPABILITIES, "serverInfo": INFO}
    if method == "tools/list":
        return {"tools": TOOLS, **COMPLETE}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "filled"}], **COMPLETE}
    if method == "skills/list":
        return {"skills": [entry()], **COMPLETE}
    if method == "resources/read":
        uri = params.get("uri")
        text = FIELDS_MD if uri == FIELDS_URI else SKILL_MD
        if tamper and uri == SKILL_URI:
            text = text.replace("once per", "ONCE PER")
        content = {"uri": uri, "mimeType": "text/markdown", "text": text}
        return {"contents": [content], **COMPLETE}
    if method == "resources/list":
        return {"resources": [], **COMPLETE}
    if method == "ping":
        return {}
    raise LookupError(method)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tamper", action="store_true")
    parser.add_argument("--log")
    args = parser.parse_args()
    for line in sys.stdin:
        message = json.loads(line)
        method, params = message.get("method"), message.get("params") or {}
        if args.log and method:
            with open(args.log, "a", encoding="utf-8") as out:
                out.write(json.dumps({"method": method, "uri": params.get("uri")}) + "\n")
        if "id" not in message or method is None:
            continue
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = answer(method, params, args.tamper)
        except LookupError:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
