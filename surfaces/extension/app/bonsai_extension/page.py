"""The page's Python entry: run the checks its parameters name on the browser's GPU, report JSON."""

from __future__ import annotations

import json
import time
from typing import Any

from .report import describe


def _check(name: str, results: dict, fn: Any, *args: Any, **kwargs: Any) -> None:
    started = time.perf_counter()
    try:
        outcome = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a visible, named error
        outcome = {"ok": False, "error": describe(exc)}
    outcome["seconds"] = round(time.perf_counter() - started, 3)
    results[name] = outcome


def run(params: Any) -> str:
    """Run the checks in `params` (a dict from page.js); the JSON result the page shows and tests read.

    params: checks (list of "attention", "verbs", "rope", "device_loss"), mutate (attention mutation switch), model_path + model_name
    (a model written into the file system by the page), prompt + tokens + kv + lose_after (greedy generation with it, KV cache mode kv, the device destroyed
    before decode step lose_after when it is not 0), kernels ("gpu": generate with a GPU adapter's kernels even on
    a CPU adapter).
    """
    params = dict(params)
    result: dict[str, Any] = {"ok": False, "checks": {}, "error": None}
    try:
        from bonsai.gpu.browser import BrowserGpu

        gpu = BrowserGpu.create() if params.get("checks") else None
        result["adapter"] = gpu.description if gpu is not None else None
        result["adapter_info"] = gpu.adapter.info if gpu is not None else None
        if "attention" in params.get("checks", []):
            from . import attention_check

            _check("attention", result["checks"], attention_check.run, gpu, mutate=params.get("mutate", ""))
        if "verbs" in params.get("checks", []):
            from . import verbs_check

            _check("verbs", result["checks"], verbs_check.run, gpu)
        if "rope" in params.get("checks", []):
            from . import rope_check

            _check("rope", result["checks"], rope_check.run, gpu)
        if "device_loss" in params.get("checks", []):
            from . import device_check

            _check("device_loss", result["checks"], device_check.run, BrowserGpu.create)
        if params.get("model_path"):
            from . import model_check

            _check("model", result["checks"], model_check.run, params["model_path"], params.get("model_name"))
            if params.get("forced") and result["checks"]["model"]["ok"]:
                from . import forced_check

                _check("forced", result["checks"], forced_check.run, gpu or BrowserGpu.create(), params["model_path"],
                       params.get("model_name"), [int(i) for i in params["forced"]], params.get("kv", "f32"),
                       int(params.get("window", 2048)))
            if params.get("prompt") and result["checks"]["model"]["ok"]:
                from . import generate_check

                gen_gpu = gpu or BrowserGpu.create()
                if params.get("kernels") == "gpu":
                    gen_gpu.cpu_kernels = False
                _check("generate", result["checks"], generate_check.run, gen_gpu,
                       params["model_path"], params.get("model_name"), params["prompt"], int(params.get("tokens", 4)),
                       params.get("kv", "q4"), int(params.get("lose_after", 0)))
    except Exception as exc:  # noqa: BLE001 - reported in the page, never a silent hang
        result["error"] = describe(exc)
    result["ok"] = result["error"] is None and all(
        c.get("ok") for c in result["checks"].values()
    )
    return json.dumps(result)
