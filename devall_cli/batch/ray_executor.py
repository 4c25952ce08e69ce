"""The Ray executor: the tasks of a batch run on a pool of Ray actors, results stream back.

The pool has one worker (a `BatchWorker` actor, one CPU each) per CPU the cluster offers, at
most `--concurrency` and at most one per task, and each worker runs its share of the
concurrency at once (`--concurrency 16` on 2 CPUs: 2 workers running 8 tasks each). The driver
sends each worker its tasks in chunks of its share, the next chunk as soon as every task of the
last one has started, so a worker never waits for work and the driver makes one remote call per
chunk; the worker streams back which tasks started and which ended as they do. The driver
reports each outcome to the batch, which appends it to results.jsonl as with the local
executor. Workers on this machine write the run directories themselves and run in the
driver's working directory; others send each run directory's files back with its outcome for
the driver to write. A cluster devall starts ships nothing (its workers are on this machine);
joining one, the workflow's folder is shipped as Ray's working directory. A worker that dies fails
the tasks it was running; its tasks not started go to the other workers. An interruption
cancels the running tasks, which are recorded as interrupted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from devall_cli.batch.executor import BatchSink, ExecutorOptions
from devall_cli.batch.ray_cluster import LOOPBACK, RayCluster, connect
from devall_cli.batch.ray_worker import (
    BatchWorker,
    FileList,
    WorkerSpec,
    disk_mark,
    write_tree,
)
from devall_cli.batch.results import TaskOutcome
from devall_cli.batch.task_run import RUNS_DIR, TaskEnv, task_run_dir
from devall_cli.batch.tasks import BatchTask
from devall_cli.errors import DevallConnectionError

T = TypeVar("T")
CLOSE_TIMEOUT_S = 20.0
CONNECT_WAIT_S = 60.0  # how long an interrupted batch waits for Ray's start before it exits
SERVERS_DIR = "servers"


class RayThread:
    """One daemon thread that starts and stops Ray (it never keeps the process from exiting).

    Ray's processes are started with the kernel's parent-death signal, which follows the thread
    that started them: this thread lives until the cluster is stopped.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="devall-ray", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Run `fn` on the thread; its future."""
        future: Future[T] = Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def stop(self) -> None:
        """End the thread once the jobs given so far are done."""
        self._jobs.put(None)

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)


def plan_pool(concurrency: int, tasks: int, cpus: int) -> tuple[int, int]:
    """(workers, tasks at once per worker) for this concurrency, task count and cluster."""
    slots = max(1, min(concurrency, tasks))
    workers = max(1, min(slots, cpus))
    return workers, math.ceil(slots / workers)


def worker_spec(env: TaskEnv, *, per_worker: int = 1) -> WorkerSpec:
    """What the workers need to load the workflow as the driver did (and, on this machine,
    where to write the run directories)."""
    from devall_cli.procs.sandbox import default_sandbox

    path = env.workflows.path.resolve()
    batch_dir = env.batch_dir.resolve()
    return WorkerSpec(
        batch_dir=str(batch_dir),
        cwd=str(Path.cwd()),
        mark=disk_mark(batch_dir),
        per_worker=per_worker,
        workflow_path=str(path),
        workflow_name=path.name,
        cli_vars=dict(env.workflows.cli_vars),
        dotenv_text=dotenv_text(path.parent, Path.cwd(), env.workflows.env_file),
        max_steps=env.max_steps,
        answers=env.answers,
        policy=env.policy,
        approver=env.approver,
        sandbox=default_sandbox(),
    )


def dotenv_text(workflow_dir: Path, cwd: Path, env_file: Path | None) -> str | None:
    """The .env files the driver reads (workflow's folder, current folder, --env-file), joined."""
    parts: list[str] = []
    seen: set[Path] = set()
    for path in (workflow_dir / ".env", cwd / ".env", env_file):
        if path is None or path.resolve() in seen or not path.exists() or path.is_dir():
            continue
        seen.add(path.resolve())
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts) if parts else None


class RayExecutor:
    """Runs the batch's tasks on a Ray cluster: a local one on loopback, or `--ray-address`."""

    name = "ray"

    def __init__(self, env: TaskEnv, options: ExecutorOptions) -> None:
        self.env = env
        self.options = options
        self.cluster: RayCluster | None = None
        self.workers: list[Any] = []  # actor handles
        self._connecting: concurrent.futures.Future[RayCluster] | None = None
        # Ray is started and stopped from one thread that lives as long as the cluster: the
        # processes Ray starts are killed by the kernel when the thread that started them ends.
        self._thread = RayThread()
        self._closed = False
        self._held: set[int] = set()

    async def run(self, tasks: Sequence[BatchTask], sink: BatchSink) -> None:
        """Start the pool and run the tasks, in chunks, on whichever worker needs more."""
        if not tasks:
            return
        address = self.options.ray_address
        if address:
            sink.note(f"joining the Ray cluster at {address}")
        else:
            sink.note(f"starting a local Ray cluster on {LOOPBACK}")
        started = time.monotonic()
        cluster = await self._connect()
        workers, per_worker = plan_pool(self.options.concurrency, len(tasks), cluster.cpus())
        took = time.monotonic() - started
        pool = f"{workers} worker{'s' if workers > 1 else ''}, {per_worker} task"
        pool += f"{'s' if per_worker > 1 else ''} at once each"
        sink.note(f"{'joined' if address else 'cluster up'} in {took:.1f} s; {pool}")
        import ray

        # Calls at once on one worker: a chunk per running task at most, one waiting, hold and
        # close (the worker's own slots keep to its share of the concurrency).
        actor = ray.remote(BatchWorker).options(
            num_cpus=1, max_concurrency=per_worker + 3, max_restarts=0
        )
        self.env.batch_dir.mkdir(parents=True, exist_ok=True)
        spec = worker_spec(self.env, per_worker=per_worker)
        self.workers = [actor.remote(spec) for _ in range(workers)]
        pending, live = deque(tasks), list(self.workers)
        # Again while tasks are left: a worker that died gave its tasks not started back.
        while live and pending and not sink.should_stop():
            feeds = [
                asyncio.create_task(self._feed(worker, pending, sink, per_worker))
                for worker in live
            ]
            try:
                alive = await asyncio.gather(*feeds)
            except BaseException:
                for feed in feeds:
                    feed.cancel()
                await asyncio.gather(*feeds, return_exceptions=True)
                raise
            live = [worker for worker, ok in zip(live, alive, strict=True) if ok]

    async def _connect(self) -> RayCluster:
        """Connect in a thread: the event loop stays free to hear Ctrl-C and SIGTERM."""
        loop = asyncio.get_running_loop()
        address = self.options.ray_address
        # A local cluster's workers read the workflow where it is: nothing to ship.
        folder = self.env.workflows.path.resolve().parent if address else None
        self._connecting = self._thread.submit(connect, address, working_dir=folder)
        try:
            self.cluster = await asyncio.wrap_future(self._connecting, loop=loop)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            address = self.options.ray_address
            what = f"join the Ray cluster at {address}" if address else "start a local Ray cluster"
            raise DevallConnectionError(f"cannot {what}: {exc}") from None
        return self.cluster

    async def _feed(
        self, worker: Any, pending: deque[BatchTask], sink: BatchSink, size: int
    ) -> bool:
        """Chunks of `size` tasks to `worker`, the next once the last has all started (so at
        most one chunk waits there), until no task is left, the batch stops or the worker died;
        False if it died."""
        streams: list[asyncio.Task[bool]] = []
        alive = True
        try:
            while alive and pending and not sink.should_stop():
                chunk = [pending.popleft() for _ in range(min(size, len(pending)))]
                started = asyncio.Event()
                stream = asyncio.create_task(self._stream(worker, chunk, pending, sink, started))
                streams.append(stream)
                waiter = asyncio.create_task(started.wait())
                await asyncio.wait({waiter, stream}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                alive = alive and all(s.result() for s in streams if s.done())
                streams = [s for s in streams if not s.done()]
            results = await asyncio.gather(*streams)
        except BaseException:
            for stream in streams:
                stream.cancel()
            await asyncio.gather(*streams, return_exceptions=True)
            raise
        return alive and all(results)

    async def _stream(
        self,
        worker: Any,
        chunk: list[BatchTask],
        pending: deque[BatchTask],
        sink: BatchSink,
        all_started: asyncio.Event,
    ) -> bool:
        """One chunk on `worker`: each task reported as it starts and ends; False when the
        worker died (its tasks not started go back to `pending`, first)."""
        import ray

        waiting = {task.id: task for task in chunk}
        running: dict[str, tuple[BatchTask, float]] = {}
        records = [
            {"id": t.id, "task": t.task, "vars": dict(t.vars), "line": t.line} for t in chunk
        ]
        stream = worker.run_chunk.options(num_returns="streaming").remote(records)
        try:
            async for ref in stream:
                message = await ref
                for task_id in message["started"]:
                    task = waiting.pop(task_id)
                    running[task_id] = (task, time.monotonic())
                    sink.task_started(task)
                if not waiting:
                    all_started.set()
                for reply in message["done"]:
                    task, started = running.pop(_reply_id(reply))
                    sink.task_finished(self._record(task, reply, started))
                if self.cluster is not None:
                    self.cluster.remember_processes(every_s=1.0)  # servers a worker started
                if waiting and sink.should_stop():
                    self._hold(worker)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                ray.cancel(stream)
            for task, started in running.values():
                sink.task_finished(_ended(task, "interrupted", self.env, started, "interrupted"))
            raise
        except ray.exceptions.RayActorError as exc:
            message = f"the Ray worker running this task died: {_first_line(exc)}"
            for task, started in running.values():
                sink.task_finished(_ended(task, "failed", self.env, started, message))
            pending.extendleft(reversed(list(waiting.values())))
            return False
        except ray.exceptions.RayError as exc:
            message = f"the Ray task failed: {_first_line(exc)}"
            for task, started in running.values():
                sink.task_finished(_ended(task, "failed", self.env, started, message))
            for task in waiting.values():
                sink.task_started(task)
                sink.task_finished(_ended(task, "failed", self.env, time.monotonic(), message))
        finally:
            all_started.set()
        return True

    def _hold(self, worker: Any) -> None:
        """Tell `worker` to start no more tasks (once: the batch stops)."""
        if id(worker) not in self._held:
            self._held.add(id(worker))
            worker.hold.remote()

    def _record(self, task: BatchTask, reply: dict[str, Any], started: float) -> TaskOutcome:
        """The outcome the worker reported, its run directory written from the files it sent
        (unless it wrote the directory itself)."""
        if "outcome" not in reply:
            message = f"the Ray worker failed on this task: {reply.get('error')}"
            return _ended(task, "failed", self.env, started, message)
        outcome = TaskOutcome.from_record(reply["outcome"])
        files: FileList = reply.get("files") or []
        if outcome.run_dir and not reply.get("written"):
            try:
                write_tree(task_run_dir(self.env.batch_dir, task), files)
            except OSError as exc:
                message = f"cannot write the run directory {outcome.run_dir}: {exc.strerror or exc}"
                return _ended(task, "failed", self.env, started, message)
        return outcome

    async def close(self) -> None:
        """Stop the workers (their servers first), then leave or stop the cluster; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self.env.pool.close()
        if self._connecting is not None and not self._connecting.done():
            # ray.init cannot be interrupted: wait for it (a while), then undo it.
            with contextlib.suppress(BaseException):
                future = asyncio.wrap_future(self._connecting)
                self.cluster = await asyncio.wait_for(future, CONNECT_WAIT_S)
        try:
            if self.cluster is not None:
                try:
                    await self._stop_workers()
                finally:
                    await asyncio.wrap_future(self._thread.submit(self.cluster.shutdown))
        finally:
            self._thread.stop()

    async def _stop_workers(self) -> None:
        import ray

        replies = [worker.close.remote() for worker in self.workers]
        done: list[Any] = []
        with contextlib.suppress(TimeoutError):
            done = await asyncio.wait_for(
                asyncio.gather(*replies, return_exceptions=True), CLOSE_TIMEOUT_S
            )
        for number, logs in enumerate(done, start=1):
            if isinstance(logs, list) and logs:
                with contextlib.suppress(OSError):
                    folder = self.env.batch_dir / SERVERS_DIR / f"worker-{number}"
                    write_tree(folder, logs)
        if self.cluster is not None:
            self.cluster.remember_processes()
        for worker in self.workers:
            with contextlib.suppress(Exception):
                ray.kill(worker)
        self.workers = []


def _ended(
    task: BatchTask, status: str, env: TaskEnv, started: float, message: str
) -> TaskOutcome:
    """An outcome the driver writes itself (the worker could not say)."""
    from devall_cli.errors import ExitCode

    code = env.interrupt_code() if status == "interrupted" else int(ExitCode.FAILED)
    return TaskOutcome(
        id=task.id,
        status=status,
        error=message,
        duration_ms=round((time.monotonic() - started) * 1000, 3),
        tokens={"prompt": 0, "completion": 0, "total": 0},
        run_dir="",
        exit_code=code,
    )


def _reply_id(reply: dict[str, Any]) -> str:
    outcome = reply.get("outcome")
    return str(outcome["id"] if isinstance(outcome, dict) else reply["id"])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


__all__ = ["RUNS_DIR", "RayExecutor", "plan_pool"]
