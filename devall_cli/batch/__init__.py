"""`devall batch`: one workflow over many tasks, resumable, with shared MCP servers.

tasks.py         the TASKS file (JSONL, CSV, plain text) → BatchTask, bad lines located
workflows.py     the workflow loaded once per distinct set of task `vars` (bounded cache)
shared_tools.py  MCP servers shared by the tasks of a batch (one per distinct config)
task_run.py      one task = one RunSession in `runs/<task>/`, its outcome
executor.py      the Executor seam and the local (asyncio) executor
results.py       results.jsonl: whole lines, fsync'd; read back to resume
summary.py       summary.json: counts, wall time, throughput, tokens, slowest tasks
runner.py        the batch: resume, run, record, stop early, summarize
"""
