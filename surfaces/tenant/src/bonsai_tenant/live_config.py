"""The running server's tenants, reloaded from the tenants file on SIGHUP or when the file changes.

A reload reads and checks the whole file first and swaps it in at once: requests in flight keep the
tenant they authenticated as, new ones see the new keys, and none is dropped. A file that does not
load, or that changes what only a restart can apply (models, [server], [database]), is logged and
the running configuration kept. Keys, tenants, quotas and retention change live.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .tenants import Limits, ModelSpec, ServerConfig, Tenant, load_config

log = logging.getLogger("bonsai_tenant")


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed file: (inode, size, mtime in ns); None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class LiveConfig:
    """The current ServerConfig, swapped whole by `reload()`; `on_change(new)` runs after each swap."""

    def __init__(self, config: ServerConfig, path: str | Path | None = None,
                 on_change: Callable[[ServerConfig], None] | None = None) -> None:
        self.current = config
        self.path = None if path is None else Path(path)
        self.on_change = on_change
        self._stamp = None if self.path is None else _stamp(self.path)

    # what requests ask, always of the current configuration

    def authenticate(self, authorization: str | None) -> Tenant:
        return self.current.authenticate(authorization)

    def model_for(self, tenant: Tenant, model_id: str) -> ModelSpec:
        return self.current.model_for(tenant, model_id)

    @property
    def models(self) -> Any:
        return self.current.models

    @property
    def limits(self) -> Limits:
        return self.current.limits

    @property
    def tenants(self) -> tuple[Tenant, ...]:
        return self.current.tenants

    def reload(self) -> bool:
        """Read the tenants file again and apply it; False (the reason logged) when it is kept as it was."""
        if self.path is None:
            return False
        self._stamp = _stamp(self.path)
        try:
            new = load_config(self.path, os.environ)
        except ConfigError as exc:
            log.error("reload: %s; the running configuration is kept", exc)
            return False
        for name, old_value, new_value in (("models", self.current.models, new.models),
                                           ("[server]", self.current.limits, new.limits),
                                           ("[database]", self.current.database, new.database)):
            if old_value != new_value:
                log.error("reload: %s: %s changed, which only a restart applies; the running configuration is kept",
                          self.path, name)
                return False
        self.current = new
        if self.on_change is not None:
            self.on_change(new)
        log.info("reload: %s: %d tenants, %d keys", self.path, len(new.tenants),
                 sum(len(t.key_sha256s) for t in new.tenants))
        return True

    def changed(self) -> bool:
        """Whether the file differs from the one last read (a write, or a new file moved in its place)."""
        return self.path is not None and _stamp(self.path) != self._stamp

    @contextlib.asynccontextmanager
    async def watching(self, interval: float) -> AsyncIterator[None]:
        """While the app runs: reload on SIGHUP (where the event loop can take signals: the main
        thread on Unix) and when the file changes (looked at every `interval` seconds; 0: never)."""
        if self.path is None:
            yield
            return
        loop = asyncio.get_running_loop()
        hangup = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
            loop.add_signal_handler(signal.SIGHUP, self.reload)
            hangup = True

        async def poll() -> None:
            while True:
                await asyncio.sleep(interval)
                if self.changed():
                    self.reload()

        task = asyncio.create_task(poll()) if interval > 0 else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
            if hangup:
                loop.remove_signal_handler(signal.SIGHUP)
