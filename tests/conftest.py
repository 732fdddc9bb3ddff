"""Shared fixtures: one GPU device per test session, on the best adapter available."""

from __future__ import annotations

import os

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def gpu():
    """The session's `bonsai.gpu.Gpu`: lavapipe here and in CI, a real GPU elsewhere.

    In CI a missing adapter fails the test (lavapipe is always installed there); elsewhere it skips.
    """
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp/bonsai-xdg-tests")
    os.makedirs(os.environ["XDG_RUNTIME_DIR"], exist_ok=True)
    try:
        from bonsai.gpu import Gpu

        return Gpu.create()
    except Exception as exc:  # noqa: BLE001 - any failure to get a device is reported the same way
        if _in_ci():
            pytest.fail(f"CI=true but no GPU adapter could be opened: {exc}")
        pytest.skip(f"no GPU adapter: {exc}")
