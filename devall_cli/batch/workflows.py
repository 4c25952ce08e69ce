"""The workflow of each task: loaded once per distinct set of `vars`, a few kept at a time.

Placeholders are resolved when a workflow is loaded, so tasks whose `vars` differ run
differently loaded workflows (`--var` values first, the task's `vars` over them). Tasks with
the same values share one load. Loaded workflows are kept in a small cache, most recently used
first: a batch whose every task has its own values loads each one when it runs, and memory stays
bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from devall_cli.config.model import Workflow

CACHE_SIZE = 32
VarsKey = tuple[tuple[str, str], ...]


def vars_key(task_vars: Mapping[str, str]) -> VarsKey:
    """A hashable key of a task's `vars`."""
    return tuple(sorted(task_vars.items()))


class WorkflowSet:
    """Loads the workflow file with `--var` values merged under each task's own `vars`."""

    def __init__(
        self,
        path: Path,
        *,
        cli_vars: Mapping[str, str] | None = None,
        env_file: Path | None = None,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.path = Path(path)
        self.cli_vars = dict(cli_vars or {})
        self.env_file = env_file
        self.cache_size = cache_size
        self._cache: OrderedDict[VarsKey, Workflow] = OrderedDict()
        self.loads = 0  # how many times the file was loaded (the cache at work)
        # By id, with the workflow kept beside its ids, so an id reused is never mistaken.
        self._node_ids: dict[int, tuple[Workflow, tuple[str, ...]]] = {}

    def add(self, task_vars: Mapping[str, str], workflow: Workflow) -> None:
        """Keep a workflow loaded elsewhere (the one the command checked first)."""
        self._remember(vars_key(task_vars), workflow)

    def get(self, task_vars: Mapping[str, str]) -> Workflow:
        """The workflow with these task `vars`; ConfigError when it does not load with them."""
        key = vars_key(task_vars)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        from devall_cli.workflow.loader import load_workflow

        self.loads += 1
        merged = {**self.cli_vars, **task_vars}
        workflow = load_workflow(self.path, cli_vars=merged, env_file=self.env_file)
        self._remember(key, workflow)
        return workflow

    def node_ids(self, workflow: Workflow) -> tuple[str, ...]:
        """The node paths of `workflow` (result.json's order), worked out once per workflow."""
        cached = self._node_ids.get(id(workflow))
        if cached is not None and cached[0] is workflow:
            return cached[1]
        from devall_cli.config.model import walk_nodes

        ids = tuple(path for path, _ in walk_nodes(workflow.graph))
        if len(self._node_ids) >= self.cache_size:  # bounded, like the workflows
            self._node_ids.clear()
        self._node_ids[id(workflow)] = (workflow, ids)
        return ids

    def _remember(self, key: VarsKey, workflow: Workflow) -> None:
        self._cache[key] = workflow
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
