"""How much devall reads and keeps of each input from outside; every limit is defined here, once.

A broken or hostile input (an endless `--task-file`, a model endpoint answering hundreds of MB,
a tool flooding its result or its log) must cost bounded memory and disk. Past its limit an
input is refused with a clear error, or kept cut with a visible marker; docs/reliability.md
lists each limit and what happens past it. Code reads the limits through this module
(`limits.TASK_BYTES`), so that a test may lower one for a single run.
"""

from __future__ import annotations

MB = 1024 * 1024

# Refused past the limit (an error naming the size and the limit).
WORKFLOW_FILE_BYTES = 10 * MB  # a workflow YAML file (the largest real ones are a few 100 kB)
ENV_FILE_BYTES = 1 * MB  # one `.env` file (KEY=VALUE lines)
TASK_BYTES = 10 * MB  # the task of `devall run --task-file PATH|-`
ANSWERS_FILE_BYTES = 10 * MB  # the replies file of `devall run --answers FILE`
MODEL_REPLY_BYTES = 10 * MB  # the body of one model endpoint answer, after decompression
BASE64_BYTES = 50 * MB  # base64 content of one binary tool result block (not decoded past it)
DYNAMIC_UNITS = 10_000  # units one visit of a node splits its dynamic-edge input into
SUBGRAPH_DEPTH = 16  # subgraphs inside subgraphs (inline or file), counted from the workflow
SUBGRAPH_FILES = 256  # subgraph files one workflow includes, each inclusion counted
SUBGRAPH_VALUES = 200_000  # YAML values of those files together, each inclusion counted
MEMORY_FILE_BYTES = 256 * MB  # a memory store's JSON file (memory_path, index_path)
SKILL_FILE_BYTES = 128 * 1024  # a SKILL.md, or a file read_skill_file reads (ChatDev's limit)

# Cut past the limit, with a marker saying how much was kept.
TOOL_RESULT_CHARS = 1_000_000  # text of one tool result kept for the trace, logs and the model
CODE_OUTPUT_CHARS = 1_000_000  # stdout, and stderr, of one visit of a `python` node
STDIO_LINE_BYTES = 16 * MB  # one line a local server writes on stdout or stderr (dropped)
SERVER_LOG_BYTES = 10 * MB  # servers/<id>.log; then it moves to <id>.log.1 and starts afresh
AUTH_RESPONSE_BYTES = 10 * MB  # one answer of an authorization server (metadata, token, ...)
MODEL_ERROR_BODY_BYTES = 64 * 1024  # what is read of an error answer, to quote its message

# Left out past the limit, with a note in the trace.
MEMORY_SOURCE_BYTES = 10 * MB  # one file a file memory indexes


def cut_marker(kept: int, total: int) -> str:
    """The marker ending a text cut to `kept` of its `total` characters."""
    return f"…[truncated: {kept} of {total} characters]"
