"""Shared fixtures: one GPU device per test session, on the best adapter available."""

from __future__ import annotations

import os

# numpy's OpenBLAS starts a thread per core and thrashes on small matrices on a 2-core box; one
# thread made the numpy reference forward about 5x faster. Must be set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def gpu():
    """The test run's shared `bonsai.gpu.Gpu`: lavapipe here and in CI, a real GPU elsewhere.

    In CI a missing adapter fails the test (lavapipe is always installed there); elsewhere it skips.
    """
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp/bonsai-xdg-tests")
    os.makedirs(os.environ["XDG_RUNTIME_DIR"], exist_ok=True)
    try:
        from bonsai.gpu.device import Gpu

        return Gpu.create()
    except Exception as exc:  # noqa: BLE001 - any failure to get a device is reported the same way
        if _in_ci():
            pytest.fail(f"CI=true but no GPU adapter could be opened: {exc}")
        pytest.skip(f"no GPU adapter: {exc}")
