"""One worker of the Ray executor: an actor that runs tasks with its own long-lived servers.

The worker is the local executor's machinery in another process: its own `TaskEnv` with a
`SharedSources` pool, so the MCP servers it starts stay up across the tasks it runs, and its own
`WorkflowSet`. Each task runs into the worker's scratch directory exactly as `devall run`
writes a run; the worker then hands back the task's outcome and the files of its run directory,
and the driver writes them under the batch's `runs/<task>/` (a cluster has no shared disk).

The workflow is loaded from its path on the driver's machine when that path exists on the
worker's (a local cluster: files next to the workflow, and outside its folder, are found as in a
local batch), else from the copy of the workflow's folder Ray shipped as the working directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.nodes.human_input import Answers
from devall_cli.tools.policy import Approver, ToolPolicy

FileList = list[tuple[str, bytes]]


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker needs to load the workflow as the driver did."""

    workflow_path: str  # absolute, on the driver's machine
    workflow_name: str  # the file's name within the shipped folder
    cli_vars: Mapping[str, str] = field(default_factory=dict)
    dotenv_text: str | None = None  # the driver's .env files and --env-file, merged in order
    max_steps: int = 1000
    answers: Answers | None = None
    policy: ToolPolicy | None = None  # the command line's layer of the tool policy
    approver: Callable[[], Approver] | None = None  # a picklable maker, one approver per task
    sandbox: str = "off"  # the driver's --sandbox default: workers are other processes


def workflow_file(spec: WorkerSpec, shipped_dir: Path) -> Path:
    """The driver's own file when this machine has it, else the shipped copy."""
    original = Path(spec.workflow_path)
    if original.is_file():
        return original
    return shipped_dir / spec.workflow_name


def read_tree(root: Path) -> FileList:
    """Every regular file under `root`, as (path relative to `root`, content)."""
    files: FileList = []
    if not root.is_dir():
        return files
    for folder, _dirs, names in os.walk(root):
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                files.append((path.relative_to(root).as_posix(), path.read_bytes()))
    return files


def write_tree(root: Path, files: FileList) -> None:
    """Write `files` under `root` (which is emptied first); paths never leave `root`."""
    if root.is_symlink():
        root.unlink()
    elif root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    base = root.resolve()
    for relative, data in files:
        target = (root / relative).resolve()
        if not target.is_relative_to(base) or target == base:
            continue  # a worker never sends such a path; a broken one is not followed
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


class BatchWorker:
    """The actor: runs the tasks it is given, several at once, on one set of servers."""

    def __init__(self, spec: WorkerSpec) -> None:
        from devall_cli.batch.shared_tools import SharedSources
        from devall_cli.batch.task_run import TaskEnv
        from devall_cli.batch.workflows import WorkflowSet
        from devall_cli.procs.sandbox import set_default_sandbox

        set_default_sandbox(spec.sandbox)  # before any server of this worker is spawned
        self.scratch = Path(tempfile.mkdtemp(prefix="devall-worker-"))
        env_file: Path | None = None
        if spec.dotenv_text is not None:
            env_file = self.scratch / "batch.env"
            fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(spec.dotenv_text)
        workflows = WorkflowSet(
            workflow_file(spec, Path.cwd()), cli_vars=spec.cli_vars, env_file=env_file
        )
        self.env = TaskEnv(
            batch_dir=self.scratch,
            workflows=workflows,
            pool=SharedSources(self.scratch),
            max_steps=spec.max_steps,
            answers=spec.answers,
            policy=spec.policy,
            approver=spec.approver,
        )

    async def run(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """Run one task: its outcome's record and the files of its run directory."""
        from devall_cli.batch.results import TaskOutcome
        from devall_cli.batch.task_run import run_task, task_run_dir
        from devall_cli.batch.tasks import BatchTask

        batch_task = BatchTask(
            id=str(task["id"]),
            task=str(task["task"]),
            vars=dict(task.get("vars") or {}),
            line=int(task.get("line") or 0),
        )
        outcomes: list[TaskOutcome] = []
        await run_task(batch_task, self.env, outcomes.append)
        run_dir = task_run_dir(self.scratch, batch_task)
        files = read_tree(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        return {"outcome": outcomes[0].record(), "files": files, "pid": os.getpid()}

    async def close(self) -> FileList:
        """Stop this worker's servers; the files of their logs (`servers/...`)."""
        await self.env.pool.close()
        logs = read_tree(self.scratch / "servers")
        shutil.rmtree(self.scratch, ignore_errors=True)
        return logs
