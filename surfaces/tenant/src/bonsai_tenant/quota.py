"""Daily token quotas: a request runs only if its prompt and max_tokens fit in what its tenant has
left for the UTC day (used, plus what its running requests hold); else a 429 until midnight UTC.
"""

from __future__ import annotations

import math

from .errors import ApiError
from .store.completions import DAY


class QuotaExceeded(ApiError):
    """The tenant's tokens for today cannot cover this request: 429 with Retry-After (seconds until
    the quota resets)."""

    def __init__(self, tenant: str, quota: int, charged: int, need: int, now: float) -> None:
        self.retry_after = max(1, math.ceil(DAY - now % DAY))
        super().__init__(429, f"tenant {tenant!r} has used {charged} of its {quota} tokens for today (UTC), "
                              f"requests still running included; this one may use {need} (its prompt and "
                              f"max_tokens): lower max_tokens, or wait for the quota to reset at 00:00 UTC, "
                              f"in {self.retry_after} s",
                         type="insufficient_quota", code="daily_quota_exceeded")


def never_fits(tenant: str, quota: int, need: int) -> ApiError:
    """A request larger than the whole daily quota: no waiting helps, so a 400 naming max_tokens."""
    return ApiError(400, f"max_tokens: this request may use {need} tokens (its prompt and max_tokens), more than "
                         f"the whole daily quota of tenant {tenant!r} ({quota})", param="max_tokens",
                    code="invalid_value")
