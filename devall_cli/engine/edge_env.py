"""What edge conditions and processors may use from the run (edges.base.EdgeEnv)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devall_cli.config.model import Workflow


class WorkflowEdgeEnv:
    """The workflow's edge functions, and the state shared with processor functions."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self._state: dict[str, Any] = {"workflow_dir": str(workflow.directory)}

    def function(self, folder: str, name: str) -> Callable[..., Any] | None:
        """A function of `functions/<folder>/` (not available yet: none is found)."""
        return None

    def state(self) -> dict[str, Any]:
        """The state processor functions receive as their second argument."""
        return self._state
