"""What edge conditions and processors may use from the run (edges.base.EdgeEnv)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from devall_cli.config.model import Workflow
from devall_cli.errors import ConfigError


class WorkflowEdgeEnv:
    """The workflow's edge functions, and the state shared with processor functions."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        # ChatDev hands processor functions its global state; the keys its own functions read.
        self._state: dict[str, Any] = {
            "graph_directory": workflow.directory,
            "workflow_dir": str(workflow.directory),
            "vars": dict(workflow.vars),
        }

    def function(self, name: str, file: str) -> Callable[..., Any]:
        """Import the module `file` (once per process) and return its function `name`.

        The module's top-level code runs here; an import that fails is a ConfigError naming
        the file and line, as for function tools.
        """
        from devall_cli.config.function_loading import FunctionResolutionError, load_named

        try:
            return load_named(Path(file), name)
        except FunctionResolutionError as exc:
            raise ConfigError(exc.message) from None

    def state(self) -> dict[str, Any]:
        """The state processor functions receive as their second argument (one dict per run)."""
        return self._state
