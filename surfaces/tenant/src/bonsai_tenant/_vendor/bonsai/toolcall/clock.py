"""The `clock` tool: the current date and time, in an optional IANA time zone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Optional  # noqa: UP035 - the schema generator documents Optional[T] too
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ToolExecutionError
from .registry import Tool, tool


def make_clock(now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> Tool:
    """A clock tool reading `now()` (an aware datetime; tests pass a fixed one)."""

    def clock(timezone: Optional[str] = None) -> str:  # noqa: UP045 - exercises Optional[T]
        """Get the current date and time as ISO 8601.

        Args:
            timezone: IANA time zone name such as "Europe/Paris"; UTC when omitted.
        """
        name = timezone or "UTC"
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolExecutionError(
                f"unknown time zone {name!r}; use an IANA name like 'Europe/Paris'"
            ) from None
        return f"{now().astimezone(zone).isoformat(timespec='seconds')} ({name})"

    return tool(clock)
