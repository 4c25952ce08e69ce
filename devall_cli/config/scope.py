"""Where a workflow file being read sits (`LoadScope`), and what all files of one load share.

Every file is read in a scope: which file it is, the chain of files that include it, how deep it
sits in subgraphs, and the `vars` it inherits (the assembler's includes lay a file's own over).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from devall_cli import limits
from devall_cli.config.expansion import ExpansionBudget
from devall_cli.config.model import EMPTY, GraphConfig
from devall_cli.config.yaml_source import KeyPath, SourceDocument

if TYPE_CHECKING:
    from devall_cli.config.schema import Checker


@dataclass
class LoadBudget:
    """What the files of one load share: each file read once, and how much they may hold."""

    documents: dict[Path, SourceDocument | None] = field(default_factory=dict)
    inclusions: int = 0
    values: int = 0  # YAML values of the subgraph files, each inclusion counted
    expansion: ExpansionBudget = field(default_factory=ExpansionBudget)


@dataclass(frozen=True)
class LoadScope:
    """Where a file being read sits: the file, who includes it, and the values it sees."""

    file: Path  # absolute
    display: str  # the path as messages show it
    root_dir: Path  # the top-level workflow's folder
    root_display: str  # that folder as messages show it ('' for the current folder)
    chain: tuple[tuple[Path, str], ...]  # (file, display) from the top-level file to this one
    cli_vars: Mapping[str, str] = EMPTY
    environ: Mapping[str, str] = EMPTY
    dotenv: Mapping[str, str] = EMPTY
    vars: Mapping[str, Any] = EMPTY  # resolved `vars` of this file laid over inherited ones
    depth: int = 0  # how many subgraphs (inline or file) enclose what is being read
    tools_only: bool = False  # only tooling needs its placeholders (listings, probes)
    budget: LoadBudget = field(default_factory=LoadBudget, compare=False)

    @classmethod
    def top(
        cls,
        file: Path,
        display: str,
        *,
        cli_vars: Mapping[str, str],
        environ: Mapping[str, str],
        dotenv: Mapping[str, str],
        tools_only: bool = False,
    ) -> LoadScope:
        """The scope of the workflow file devall was given."""
        return cls(
            file=file,
            display=display,
            root_dir=file.parent,
            root_display=os.path.dirname(display),
            chain=((file, display),),
            cli_vars=cli_vars,
            environ=environ,
            dotenv=dotenv,
            tools_only=tools_only,
        )

    def nested(self) -> LoadScope:
        """The scope one subgraph deeper in the same file (an inline subgraph)."""
        return replace(self, depth=self.depth + 1)

    def including(self, file: Path, display: str) -> LoadScope:
        """The scope of a subgraph file this file includes (its own `vars` come later)."""
        return replace(
            self,
            file=file,
            display=display,
            chain=(*self.chain, (file, display)),
            depth=self.depth + 1,
        )


def within_limits(ck: Checker, path: KeyPath, scope: LoadScope) -> bool:
    """Whether one more subgraph level fits; records the error when it does not."""
    if scope.depth < limits.SUBGRAPH_DEPTH:
        return True
    ck.error(path, f"subgraphs are nested more than {limits.SUBGRAPH_DEPTH} levels deep")
    return False


class GraphReader(Protocol):
    """How a kind that holds a graph (the subgraph node) reads one.

    The workflow assembler hands its own parser to every checker it reads a graph with
    (`Checker.graphs`), so the kind never imports the assembler.
    """

    def parse_graph(
        self, ck: Checker, raw: Any, path: KeyPath, *, start_required: bool
    ) -> GraphConfig | None:
        """A graph block (inline), every problem recorded; None when unusable."""
        ...

    def load_file(self, ck: Checker, name: str, path: KeyPath) -> tuple[GraphConfig, str] | None:
        """The graph of the workflow file `name` named at `path`: (graph, file as shown)."""
        ...
