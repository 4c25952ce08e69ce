"""One worker of the Ray executor: an actor that runs tasks with its own long-lived servers.

The worker is the local executor's machinery in another process: its own `TaskEnv` with a
`SharedSources` pool, so the MCP servers it starts stay up across the tasks it runs, and its own
`WorkflowSet`. A worker on the driver's machine (it sees the batch directory itself: the same
boot, device and inode) writes each task's run directory straight into the batch's
`runs/<task>/` and runs in the driver's working directory, as the local executor does; any
other (no shared disk) runs each task into its scratch directory and hands back the files of
its run directory with the outcome, for the driver to write.

The driver sends tasks in chunks (`run_chunk`): the worker runs them at its share of the
concurrency and streams back, as they happen, which tasks started and which ended (several at
once when they end together), so there is one remote call per chunk, not one per task.

The workflow is loaded from its path on the driver's machine when that path exists on the
worker's (a local cluster: files next to the workflow, and outside its folder, are found as in a
local batch), else from the copy of the workflow's folder Ray shipped as the working directory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
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
    per_worker: int = 1  # tasks at once on this worker (its share of --concurrency)
    # The batch directory and the driver's working directory, used when the worker finds the
    # very same directory (`disk_mark`) on its machine: it then writes run directories there.
    batch_dir: str | None = None
    cwd: str | None = None
    mark: str | None = None  # the batch directory's disk_mark on the driver's machine


def disk_mark(folder: Path) -> str | None:
    """What tells this folder apart from any other: this boot of this machine, its device and
    inode (None when it is not there)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        info = os.stat(folder)
    except OSError:
        return None
    return f"{boot}:{info.st_dev}:{info.st_ino}"


def same_disk(spec: WorkerSpec) -> bool:
    """Whether this worker sees the driver's batch directory itself (the driver's machine)."""
    if spec.batch_dir is None or spec.mark is None:
        return False
    return disk_mark(Path(spec.batch_dir)) == spec.mark


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
        self.shared = same_disk(spec)
        if self.shared and spec.cwd is not None and os.path.isdir(spec.cwd):
            os.chdir(spec.cwd)  # relative paths resolve as in the driver, as a local batch's do
        self.slots = asyncio.Semaphore(max(1, spec.per_worker))
        self.holding = False
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
            batch_dir=Path(spec.batch_dir) if self.shared and spec.batch_dir else self.scratch,
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
        if self.shared:  # written in place: nothing to send
            return {"outcome": outcomes[0].record(), "written": True, "pid": os.getpid()}
        run_dir = task_run_dir(self.scratch, batch_task)
        files = read_tree(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        return {"outcome": outcomes[0].record(), "files": files, "pid": os.getpid()}

    async def run_chunk(self, tasks: list[Mapping[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """Run `tasks`, at most `per_worker` at once over every chunk; yield what happened.

        Each message: `started` (task ids) and `done` (replies of `run`), everything since the
        last message. A task not started once `hold()` was called is left out (never run).
        """
        news: dict[str, list[Any]] = {"started": [], "done": []}
        wake = asyncio.Event()
        jobs = [asyncio.create_task(self._one(task, news, wake)) for task in tasks]
        for job in jobs:
            job.add_done_callback(lambda _job: wake.set())
        try:
            while True:
                wake.clear()
                if news["started"] or news["done"]:
                    message = {key: list(items) for key, items in news.items()}
                    for items in news.values():
                        items.clear()
                    yield message
                    continue
                if all(job.done() for job in jobs):
                    return
                await wake.wait()
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)

    async def _one(
        self, task: Mapping[str, Any], news: dict[str, list[Any]], wake: asyncio.Event
    ) -> None:
        async with self.slots:
            if self.holding:
                return
            news["started"].append(str(task["id"]))
            wake.set()
            try:
                reply = await self.run(task)
            except Exception as exc:  # a bug (or a full disk) costs this task, not the chunk
                reply = {"id": str(task["id"]), "error": f"{type(exc).__name__}: {exc}"}
            news["done"].append(reply)
            wake.set()

    async def hold(self) -> None:
        """Start none of the tasks still waiting (the batch stops: `--max-failures`)."""
        self.holding = True

    async def close(self) -> FileList:
        """Stop this worker's servers; the files of their logs (`servers/...`)."""
        await self.env.pool.close()
        logs = read_tree(self.scratch / "servers")
        shutil.rmtree(self.scratch, ignore_errors=True)
        return logs
