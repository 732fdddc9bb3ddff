"""Daily token quotas: a tenant past its tokens for the UTC day is refused (429) until midnight UTC.

The check is made before a request runs, against what the database says the tenant used today (all
servers on it together), so the request that crosses the quota finishes and the next one is refused.
"""

from __future__ import annotations

import math

from .errors import ApiError
from .store.completions import DAY


class QuotaExceeded(ApiError):
    """The tenant used its daily tokens: 429 with Retry-After (seconds until the quota resets)."""

    def __init__(self, tenant: str, quota: int, used: int, now: float) -> None:
        self.retry_after = max(1, math.ceil(DAY - now % DAY))
        super().__init__(429, f"tenant {tenant!r} has used {used} of its {quota} tokens for today (UTC); "
                              f"the quota resets at 00:00 UTC, in {self.retry_after} s",
                         type="insufficient_quota", code="daily_quota_exceeded")


def check(tenant: str, quota: int | None, used: int, now: float) -> None:
    """Raise QuotaExceeded when `used` tokens today reach `quota` (None: no quota)."""
    if quota is not None and used >= quota:
        raise QuotaExceeded(tenant, quota, used, now)
