"""The examples at the end of each `--help` page, by command: plain data, read on --help only.

Keys are the command's words after `devall` ("" is `devall` itself). Each example is one
command line that works from the repository's root (with its virtualenv active, so that
`python` finds fastmcp); a line ending in ` \\` goes on with the next one. A line may start a
server the next lines use (`... &`). A command without an entry fails the test that walks
every help page.
"""

from __future__ import annotations

DEMO = "workflows/demo_offline.yaml"
EXAMPLES_DIR = "workflows/examples"
OAUTH = f"{EXAMPLES_DIR}/oauth_remote.yaml"
FIXTURE = "--command 'python tests/servers/resources_server.py'"
SKILLS = "--command 'python tests/servers/skills_server.py'"
# The test authorization server approves a sign-in without a person (see oauth_remote.yaml).
OAUTH_SERVER = "python tests/servers/oauth_server.py --port 8765 --scopes tools"
GREET_ARGS = """'{"name": "Bo"}'"""
RAND_ARGS = """'{"a": 1, "b": 6}'"""

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        f"devall validate {DEMO}",
        f'devall run {DEMO} --task "a haiku"',
        f"devall tools list {DEMO}",
    ),
    "auth": (
        f"{OAUTH_SERVER} &",
        f"DEVALL_OAUTH_BROWSER=fetch devall auth login {OAUTH}",
        "devall auth list",
    ),
    "auth list": (
        "devall auth list",
        "devall auth list --json",
    ),
    "auth login": (
        f"{OAUTH_SERVER} &",
        f"DEVALL_OAUTH_BROWSER=fetch devall auth login {OAUTH}",
        "devall auth login --url http://127.0.0.1:8765/mcp --scope tools",
    ),
    "auth logout": (
        f"devall auth logout {OAUTH}",
        "devall auth logout --all",
    ),
    "batch": (
        f"devall batch {EXAMPLES_DIR}/batch_fortunes.yaml \\",
        f"    {EXAMPLES_DIR}/batch_fortunes.tasks.jsonl --out logs/fortunes \\",
        "    --max-model-calls 20",
        f"devall batch {EXAMPLES_DIR}/batch_fortunes.yaml \\",
        f"    {EXAMPLES_DIR}/batch_fortunes.tasks.csv -c 2 --json --approve never",
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:6006 devall batch \\",
        f"    {EXAMPLES_DIR}/batch_fortunes.yaml \\",
        f"    {EXAMPLES_DIR}/batch_fortunes.tasks.jsonl --otel-content",
    ),
    "graph": (
        f"devall graph {EXAMPLES_DIR}/critic_loop.yaml",
        f"devall graph {EXAMPLES_DIR}/critic_loop.yaml -o loop.svg",
        f"devall graph {EXAMPLES_DIR}/subgraph_files.yaml --format dot",
    ),
    "init": (
        "devall init my-flow",
        "devall test my-flow",
    ),
    "probe": (
        f"devall probe {DEMO}",
        f"devall probe {DEMO} --json --deny-tool destructiveHint",
        f"devall probe --mcp-config {EXAMPLES_DIR}/mcp_servers.json --server example",
    ),
    "prompts": (
        f"devall prompts list {FIXTURE}",
        f"devall prompts get {FIXTURE} greet --args {GREET_ARGS}",
    ),
    "prompts get": (
        f"devall prompts get {FIXTURE} greet --args {GREET_ARGS}",
        f"devall prompts get {FIXTURE} greet --arg name=Bo --arg tone=wry",
        f"devall prompts get {FIXTURE} greet --complete tone=w",
    ),
    "prompts list": (
        f"devall prompts list {DEMO}",
        f"devall prompts list {FIXTURE} --json",
    ),
    "report": (
        f"devall run {DEMO} --task hi --out logs/demo",
        "devall report logs/demo",
        "devall report logs/demo -o demo.html",
    ),
    "resources": (
        f"devall resources list {FIXTURE}",
        f"devall resources read {FIXTURE} memo://notes",
    ),
    "resources list": (
        f"devall resources list {DEMO}",
        f"devall resources list {FIXTURE} --json",
    ),
    "resources read": (
        f"devall resources read {FIXTURE} memo://logo.png --json",
        f"devall resources read {FIXTURE} 'memo://notes/{{name}}' --arg name=today",
        f"devall resources read {FIXTURE} 'memo://notes/{{name}}' --complete name=a",
    ),
    "resources watch": (
        f"devall resources watch {FIXTURE} memo://counter --timeout 2",
        f"devall resources watch {FIXTURE} memo://counter --read --json",
    ),
    "resources templates": (
        f"devall resources templates {DEMO}",
        f"devall resources templates {FIXTURE}",
    ),
    "run": (
        f'devall run {DEMO} --task "a haiku"',
        f"devall run {DEMO} --task hi --json --report --otel \\",
        "    --approve never --allow-tool rand_num --max-model-calls 10",
        f"devall run {EXAMPLES_DIR}/human_review_loop.yaml --task rain \\",
        f"    --answers {EXAMPLES_DIR}/human_review_loop.answers.json",
    ),
    "schema": (
        "devall schema -o workflow.schema.json",
        "devall schema",
    ),
    "skills": (
        f"devall skills list {SKILLS}",
        f"devall skills read {SKILLS} pdf-forms references/FIELDS.md",
    ),
    "skills list": (
        f"devall skills list {SKILLS}",
        f"devall skills list {SKILLS} --json",
    ),
    "skills read": (
        f"devall skills read {SKILLS} pdf-forms",
        f"devall skills read {SKILLS} pdf-forms references/FIELDS.md",
    ),
    "test": (
        "devall init my-flow",
        "devall test my-flow --approve never --max-model-calls 50",
        "devall test my-flow/workflow.test.yaml --json --junit report.xml",
    ),
    "tools": (
        f"devall tools list {DEMO}",
        f"devall tools call {DEMO} rand_num --args {RAND_ARGS}",
        f"devall tools diff {DEMO}",
    ),
    "tools call": (
        f"devall tools call {DEMO} rand_num --args {RAND_ARGS}",
        f"devall tools call {DEMO} sample_image --out rec --json",
    ),
    "tools diff": (
        f"devall tools lock {DEMO}",
        f"devall tools diff {DEMO}",
        f"devall tools diff {DEMO} --json --strict",
    ),
    "tools lock": (
        f"devall tools lock {DEMO}",
        f"devall tools lock {FIXTURE} -o -",
        f"devall tools lock {DEMO} -o ci/devall.lock",
    ),
    "tools list": (
        f"devall tools list {DEMO}",
        f"devall tools list {DEMO} --schema --json --approve ask",
        "devall tools list --command 'python mcp_example/mcp_server.py'",
    ),
    "validate": (
        f"devall validate {DEMO}",
        f"devall validate --allow-unset workflows/*.yaml {EXAMPLES_DIR}/*.yaml",
        "devall validate workflows/local_openai.yaml --var API_KEY=sk-test --json",
    ),
}
