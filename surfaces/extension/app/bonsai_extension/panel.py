"""The chat panel's Python entry points, called from panel.js (through runPythonAsync); each returns JSON.

    bind(hooks)                       the page's callbacks (see bridge.Bridge), once; -> {kv_modes, tools, catalog}
    inspect_model({path, name, sha256})   is the file a GGUF the engine runs, and a known model's own bytes?
    load_model({path, name, kv, settings, expected_shaders})   on a new GPU device: weights, then shaders
    send({text, settings})            one turn (plain chat, or the tool loop when tools are on)
    new_chat()                        forget the conversation
Every result is {"ok": true, ...} or {"ok": false, "error": {type, message, path?, field?}}.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from bonsai.kv import MODE_NAMES

from . import loader
from .bridge import Bridge
from .catalog import CATALOG
from .report import describe
from .session import Session, Settings
from .tools import PANEL_TOOLS

_state: dict[str, Any] = {}  # bridge, gpu, session: one model per page


def _answer(fn: Callable[[], dict]) -> str:
    try:
        return json.dumps({"ok": True, **fn()})
    except Exception as exc:  # noqa: BLE001 - every failure reaches the page, named
        return json.dumps({"ok": False, "error": describe(exc)})


def bind(hooks: Any) -> str:
    """Keep the page's hooks; answer what the settings offer (KV modes, tools)."""
    from pyodide.ffi import run_sync

    _state["bridge"] = Bridge(hooks, run_sync)
    return _answer(lambda: {"kv_modes": list(MODE_NAMES), "tools": list(PANEL_TOOLS), "catalog": list(CATALOG)})


def inspect_model(params: Any) -> str:
    p = dict(params)
    return _answer(lambda: {"model": loader.inspect(p["path"], p["name"], p.get("sha256"))})


def load_model(params: Any) -> str:
    return _answer(lambda: _load(dict(params)))


def _load(p: dict) -> dict:
    from .panel_gpu import PanelGpu

    bridge: Bridge = _state["bridge"]
    old = _state.pop("gpu", None)
    _state.pop("session", None)
    if old is not None:
        old.destroy()  # a new KV mode or model: free the old device's buffers at once
    started = time.perf_counter()
    gpu = PanelGpu.create()
    _state["gpu"] = gpu
    engine = loader.load(gpu, p["path"], p["name"], p["kv"], bridge.progress)
    loaded = time.perf_counter()
    finish = loader.compiling(gpu, bridge.progress, int(p.get("expected_shaders") or 0))
    session = Session(engine, emit=bridge.emit, should_stop=bridge.should_stop, read_tab=bridge.read_tab,
                      progress=bridge.progress)
    warm_tokens = session.warm_up(Settings.from_dict(p.get("settings")))
    shaders = finish()
    _state["session"] = session
    return {"model": loader.summary(engine.reader, engine.cfg), "kv": p["kv"], "adapter": gpu.description,
            "load_s": round(loaded - started, 3), "warm_s": round(time.perf_counter() - loaded, 3),
            "shaders": shaders, "warm_tokens": warm_tokens}


def send(params: Any) -> str:
    p = dict(params)
    return _answer(lambda: _session().send(str(p["text"]), Settings.from_dict(p.get("settings"))))


def new_chat(params: Any = None) -> str:
    """Forget the conversation (`params` unused: every entry point takes the one argument python.js passes)."""
    return _answer(lambda: (_session().new_chat(), {})[1])


def _session() -> Session:
    session = _state.get("session")
    if session is None:
        raise RuntimeError("no model is loaded yet")
    return session
