"""The one exception family of bonsai-sync; each class carries the exit code the CLI returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem at a place: `path:line:col: message` (path relative to the repo root)."""

    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


class FatalError(Exception):
    """Base of every error bonsai-sync reports; `exit_code` is what the process returns."""

    exit_code = 2

    def __init__(self, *diagnostics: Diagnostic | str) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("\n".join(str(d) for d in diagnostics))


class UsageError(FatalError):
    """A command was called with arguments that do not fit the configuration (exit 2)."""


class ConfigError(FatalError):
    """`[tool.bonsai-sync]` is missing, misspelt or inconsistent (exit 2)."""


class ClosureError(FatalError):
    """An import or resource in the closure cannot be resolved or allowed (exit 3)."""

    exit_code = 3


class VerifyError(FatalError):
    """The written surface fails its post-condition: it imports something it does not hold (exit 3)."""

    exit_code = 3


class BuildError(FatalError):
    """A bundle could not be built: a tool failed or something the bundle needs is missing (exit 3)."""

    exit_code = 3


class StaleSurfaceError(FatalError):
    """The surface's synced copy is stale, or holds hand edits a sync would overwrite (exit 1)."""

    exit_code = 1
