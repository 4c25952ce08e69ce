"""Where the tasks of a batch run: the Executor seam, and the local executor.

An executor runs tasks and reports each one's outcome to a `BatchSink`; it does not write
results.jsonl or decide when to stop (the sink does both). The local executor runs N tasks at
once in this process, on one event loop, with the batch's shared servers. Another executor
(the Ray executor, `ray_executor.py`) plugs in by implementing `Executor` and registering a
factory in `EXECUTORS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from devall_cli.batch.results import TaskOutcome
from devall_cli.batch.task_run import TaskEnv, run_task
from devall_cli.batch.tasks import BatchTask
from devall_cli.errors import UsageError


class BatchSink(Protocol):
    """What an executor reports to, and asks whether to go on."""

    def task_started(self, task: BatchTask) -> None:
        """A task began."""
        ...

    def task_finished(self, outcome: TaskOutcome) -> None:
        """A task ended (ok, failed, or interrupted by a cancellation)."""
        ...

    def should_stop(self) -> bool:
        """True when no further task may start (`--max-failures` reached, a write failed)."""
        ...

    def note(self, text: str) -> None:
        """Something the executor does that takes a while (starting a cluster), for the user."""
        ...


class Executor(Protocol):
    """Runs the tasks of a batch."""

    name: str

    async def run(self, tasks: Sequence[BatchTask], sink: BatchSink) -> None:
        """Run `tasks`, reporting each outcome; start none once `sink.should_stop()`.

        When cancelled (Ctrl-C, SIGTERM), every running task is reported as `interrupted`
        before the cancellation propagates.
        """
        ...

    async def close(self) -> None:
        """Release what the executor holds (servers, workers); idempotent."""
        ...


@dataclass(frozen=True)
class ExecutorOptions:
    """The command-line options about where tasks run."""

    concurrency: int = 4
    ray_address: str | None = None


class LocalExecutor:
    """N tasks at a time on this process's event loop, sharing the batch's servers."""

    name = "local"

    def __init__(self, env: TaskEnv, concurrency: int) -> None:
        self.env = env
        self.concurrency = max(1, concurrency)

    async def run(self, tasks: Sequence[BatchTask], sink: BatchSink) -> None:
        """Run the tasks, at most `concurrency` at once, in the order given."""
        from devall_cli.providers.http_pool import held_pool

        pending = iter(tasks)
        count = min(self.concurrency, len(tasks))
        async with held_pool():  # the model connections of one task serve the next
            workers = [asyncio.create_task(self._worker(pending, sink)) for _ in range(count)]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise

    async def _worker(self, pending: Iterator[BatchTask], sink: BatchSink) -> None:
        for task in pending:
            if sink.should_stop():
                return
            sink.task_started(task)
            await run_task(task, self.env, sink.task_finished)

    async def close(self) -> None:
        """Stop the servers the tasks shared."""
        await self.env.pool.close()


ExecutorFactory = Callable[[TaskEnv, ExecutorOptions], Executor]


def _runs_anywhere(options: ExecutorOptions) -> None:
    """The local executor needs nothing beyond devall."""


def _needs_ray(options: ExecutorOptions) -> None:
    from devall_cli.batch.ray_cluster import ray_installed

    if not ray_installed():
        raise UsageError(
            "--executor ray needs the ray extra, which is not installed: "
            "pip install 'devall-cli[ray]'"
        )


@dataclass(frozen=True)
class ExecutorKind:
    """One registered executor: how to check it can run here, and how to make it."""

    name: str
    check: Callable[[ExecutorOptions], None]  # raises UsageError when it cannot run here
    make: ExecutorFactory | None


def _local(env: TaskEnv, options: ExecutorOptions) -> Executor:
    return LocalExecutor(env, options.concurrency)


def _ray(env: TaskEnv, options: ExecutorOptions) -> Executor:
    from devall_cli.batch.ray_executor import RayExecutor

    return RayExecutor(env, options)


EXECUTORS: dict[str, ExecutorKind] = {
    "local": ExecutorKind("local", _runs_anywhere, _local),
    "ray": ExecutorKind("ray", _needs_ray, _ray),
}


def check_executor(name: str, options: ExecutorOptions) -> ExecutorKind:
    """The executor called `name`, refused (UsageError) before any work when it cannot run."""
    kind = EXECUTORS.get(name)
    if kind is None:
        known = ", ".join(sorted(EXECUTORS))
        raise UsageError(f"unknown executor {name!r}; choose one of: {known}")
    if options.ray_address is not None and name != "ray":
        raise UsageError("--ray-address is for --executor ray")
    kind.check(options)
    return kind


def make_executor(name: str, env: TaskEnv, options: ExecutorOptions) -> Executor:
    """The executor called `name` (`local` or `ray`), ready to run tasks."""
    kind = check_executor(name, options)
    assert kind.make is not None, f"executor {name} passed its check but cannot be made"
    return kind.make(env, options)
