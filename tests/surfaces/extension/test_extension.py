"""The extension in a real headless Chromium: boots Pyodide, runs the runtime on WebGPU, reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from .conftest import serve_default_model

pytestmark = pytest.mark.timeout(300)

CSP = "script-src 'self' 'wasm-unsafe-eval'; object-src 'self'"


def test_manifest_is_mv3_with_only_wasm_unsafe_eval_loosened(extension_dir: Path):
    manifest = json.loads((extension_dir / "manifest.json").read_text())
    assert manifest["manifest_version"] == 3
    assert manifest["content_security_policy"] == {"extension_pages": CSP}
    assert manifest["side_panel"] == {"default_path": "panel.html"}
    # no site access at install: the clicked tab (activeTab), or every site when asked for at use
    assert sorted(manifest["permissions"]) == ["activeTab", "scripting", "sidePanel", "storage"]
    assert "host_permissions" not in manifest
    assert manifest["optional_host_permissions"] == ["http://*/*", "https://*/*"]


@pytest.fixture(scope="module")
def checks(browser) -> dict:
    """One page load running every GPU check (each load boots Pyodide: seconds on a busy CPU)."""
    return browser.open("page.html?checks=attention,verbs,rope,device_loss")


def test_attention_windowed_equals_whole_in_the_browser(checks):
    result = checks
    assert result["error"] is None, result
    check = result["checks"]["attention"]
    assert check["ok"] and "bonsai.kv.attention/serial.wgsl" in check["kernels"], result
    assert "bonsai.kv.attention/blocks.wgsl" in check["kernels"], result
    assert check["cases"] and all(c["window_sizes"] and not c["mismatched"] for c in check["cases"]), result
    assert result["adapter"] and result["ok"] and "All checks passed" in result["page_text"]
    # the native seam's shape: gpu.adapter.info is a dict with wgpu-py's keys on both backends
    info = result["adapter_info"]
    assert info["backend_type"] == "WebGPU" and info["adapter_type"] in ("CPU", "Unknown"), info


@pytest.mark.parametrize("mutate", ["drop_boundary", "normalise_each_window"])
def test_attention_check_catches_a_broken_kernel_or_driver_in_the_browser(browser, mutate):
    result = browser.open(f"page.html?checks=attention&mutate={mutate}")
    check = result["checks"]["attention"]
    assert not check["ok"] and all(c["mismatched"] for c in check["cases"]), result
    assert not result["ok"] and "A check failed" in result["page_text"]


def _tiny_gguf(path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(64, dtype=np.float32).reshape(4, 16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_a_valid_model_file_is_read_in_the_page(browser, model_server):
    root, base = model_server
    _tiny_gguf(root / "tiny.gguf")
    result = browser.open(f"page.html?checks=&model={base}/tiny.gguf")
    model = result["checks"]["model"]
    assert model["ok"] and model["architecture"] == "llama" and model["tensors"] == 1, result


@pytest.mark.parametrize(
    ("corrupt", "error_type", "field"),
    [
        (lambda data: b"GGUX" + data[4:], "BadMagicError", "magic"),
        (lambda data: data[: len(data) // 2], "TruncatedGGUFError", None),
    ],
    ids=["bad-magic", "truncated"],
)
def test_a_corrupted_model_file_shows_a_named_error(browser, model_server, corrupt, error_type, field):
    root, base = model_server
    _tiny_gguf(root / "good.gguf")
    bad = root / f"{error_type}.gguf"
    bad.write_bytes(corrupt((root / "good.gguf").read_bytes()))
    result = browser.open(f"page.html?checks=&model={base}/{bad.name}")
    error = result["checks"]["model"]["error"]
    assert error["type"] == error_type and error["path"] == bad.name, result
    if field is not None:
        assert error["field"] == field, result
    # visible in the page, named, with the file: not a hung tab and not only in the console
    assert f'Check "model": {error_type}' in result["page_text"] and bad.name in result["page_text"]
    assert not result["ok"]


def test_the_page_reports_how_exactly_this_adapter_rotates(checks, gpu, monkeypatch):
    """RoPE on this adapter against float64, beside the native adapter's. WGSL allows sin/cos 2^-11 of
    absolute error, which SwiftShader used (~2e-4 at every position; the long forced decoding inherited
    it, bench/NOTES.md), so cos/sin come from the host's float64 table: a few f32 roundings of values
    of |x| <= 1 at every position, on both adapters."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "surfaces" / "extension" / "app"))
    from bonsai_extension import rope_check

    browser = checks["checks"]["rope"]
    native = rope_check.run(gpu)["max_error_by_position"]
    assert browser["ok"] and set(browser["max_error_by_position"]) == set(native), browser
    print(f"\nrope max |error| by position: browser {browser['max_error_by_position']}, native {native}")
    for errors in (browser["max_error_by_position"], native):
        assert all(0 <= err <= 2**-21 for err in errors.values()), errors


def test_device_loss_is_reported_and_a_new_device_gives_the_same_bits(checks):
    result = checks
    check = result["checks"]["device_loss"]
    assert check["ok"] and check["lost"].startswith("destroyed"), result
    assert check["raised"].startswith("DeviceLostError") and check["same_bits_after_recovery"], result


PROMPT = "The capital of France is"
N_TOKENS = 3  # a handful: SwiftShader decodes slowly


@pytest.fixture(scope="module")
def native_greedy(gpu):
    """The native runtime's greedy tokens for PROMPT (4-bit KV), and its decode tokens/s."""
    from bonsai.engine import Sampling
    from bonsai.engine.native import load_engine

    engine = load_engine(None, gpu=gpu, kv="q4", progress=False, max_positions=64)
    prompt_ids = engine.tokenizer.encode(PROMPT)
    gen = engine.generate(prompt_ids, max_tokens=N_TOKENS, sampling=Sampling())
    return prompt_ids, gen


def _generate_in_the_page(browser, model_server, extra: str = "") -> dict:
    result = browser.open(f"page.html?checks=&model={serve_default_model(model_server)}&prompt={PROMPT}&tokens={N_TOKENS}&kv=q4"
                          f"{extra}", timeout=240)
    check = result["checks"]["generate"]
    assert check["ok"] and check["kv"] == "q4", result
    return check


def test_greedy_tokens_in_the_browser_equal_the_native_runtime(browser, model_server, native_greedy):
    check = _generate_in_the_page(browser, model_server)
    prompt_ids, native = native_greedy
    assert check["prompt_ids"] == prompt_ids
    assert check["tokens"] == native.tokens and check["recoveries"] == 0, (check, native.tokens)
    print(f"\ngreedy {check['tokens']} {check['text']!r}: browser {check['decode_tokens_per_s']} tok/s "
          f"(load {check['load_s']} s, prefill {check['prefill_s']} s), native {native.decode_tokens_per_s:.3f} tok/s")


def test_the_engine_in_the_browser_recovers_from_device_loss_with_the_same_tokens(browser, model_server,
                                                                                 native_greedy):
    """The device is destroyed before the first decode step: device.lost -> a new BrowserGpu -> same tokens."""
    check = _generate_in_the_page(browser, model_server, "&lose_after=1")
    assert check["recoveries"] == 1 and check["tokens"] == native_greedy[1].tokens, check


# 68 tokens: the prompt is one batch of the GPU's tiled matmul (32 tokens or more), spans two blocks of attention and
# completes q4res's first 64-position group, so the batch's read gathers only the rows after it (`read_gathered`: the
# group's f32 rows stay on the GPU) and the decode steps fold that group's codes
GPU_PROMPT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
              "movable metal type, oil-based ink and a wooden screw press. Within fifty years printers worked in more "
              "than two hundred cities, books grew cheaper, and scholars, merchants and reformers could share their "
              "ideas across Europe faster than ever before. The capital of France is")


@pytest.fixture(scope="module")
def native_gpu_kernels_greedy():
    """Greedy tokens for GPU_PROMPT (q4res) from the kernels a GPU adapter gets, run natively on lavapipe."""
    from bonsai.engine import Sampling
    from bonsai.engine.native import load_engine
    from bonsai.gpu.device import Gpu

    gpu = Gpu.create()  # a device of its own: the shared `gpu` fixture keeps the CPU kernels
    gpu.cpu_kernels = False
    engine = load_engine(None, gpu=gpu, kv="q4res", progress=False, max_positions=128)
    prompt_ids = engine.tokenizer.encode(GPU_PROMPT)
    assert len(prompt_ids) > 64, "the prompt must complete a q4res group"
    return prompt_ids, engine.generate(prompt_ids, max_tokens=N_TOKENS, sampling=Sampling()).tokens


def test_a_gpu_adapters_kernels_compile_in_chromium_and_give_the_native_tokens(browser, model_server,
                                                                              native_gpu_kernels_greedy):
    """SwiftShader picks the CPU kernels, so nothing else here compiles what a user's GPU runs in Chrome: the
    matvec with its fused norm and RoPE, the tiled prompt matmul, the blocks attention, q4res's group kernel.
    Chrome's compiler (Tint) is stricter than wgpu's (naga): matmul.wgsl once divided by a constant 0 in code
    its RoPE switch left dead, which naga accepts and Tint refuses, and this check failed with that error."""
    result = browser.open(f"page.html?checks=&model={serve_default_model(model_server)}&prompt={quote(GPU_PROMPT)}"
                          f"&tokens={N_TOKENS}&kv=q4res&kernels=gpu", timeout=300)
    check = result["checks"]["generate"]
    assert check["ok"] and check["cpu_kernels"] is False, result
    prompt_ids, native = native_gpu_kernels_greedy
    assert check["prompt_ids"] == prompt_ids
    assert check["tokens"] == native, (check, native)


def test_the_file_picker_shows_a_named_error_for_a_corrupted_model(browser, tmp_path):
    good = tmp_path / "good.gguf"
    _tiny_gguf(good)
    bad = tmp_path / "picked-broken.gguf"
    bad.write_bytes(b"GGUX" + good.read_bytes()[4:])
    with browser.tab("page.html?checks=") as page:
        page.wait_for_result(60)  # booted; the picker is enabled once Python is ready
        page.pick_file("#model-file", bad)
        result = page.wait_for_result(60)
    error = result["checks"]["model"]["error"]
    assert error["type"] == "BadMagicError" and error["path"] == bad.name and error["field"] == "magic", result
    assert 'Check "model": BadMagicError' in result["page_text"] and bad.name in result["page_text"]


def test_gpu_verbs_keep_the_native_contract_in_the_browser(checks):
    result = checks
    check = result["checks"]["verbs"]
    assert check["backend"] == "BrowserGpu" and check["ok"], result
    assert set(check["items"]) >= {"write_read_offsets", "copy", "gathered_read", "dispatch_ordering",
                                  "shader_errors_name_the_file"}


def test_without_wasm_unsafe_eval_the_page_says_so_instead_of_hanging(chromium_binary, extension_dir, tmp_path):
    from .cdp import Chromium, PageTimeout

    variant = tmp_path / "extension"
    shutil.copytree(extension_dir, variant)
    manifest = json.loads((variant / "manifest.json").read_text())
    manifest["content_security_policy"]["extension_pages"] = "script-src 'self'; object-src 'self'"
    (variant / "manifest.json").write_text(json.dumps(manifest))
    chromium = Chromium(chromium_binary, variant, tmp_path / "profile")
    try:
        # the harness itself: a page that never reports fails with what it showed and logged
        with pytest.raises(PageTimeout, match=r"(?s)Loading Pyodide.*Content Security"):
            chromium.open("page.html?boot_timeout=600", timeout=4)
        result = chromium.open("page.html?boot_timeout=5", timeout=60)
    finally:
        chromium.close()
    assert result["error"]["type"] == "BootTimeout", result
    assert "Runtime: BootTimeout" in result["page_text"] and "wasm-unsafe-eval" in result["page_text"]
    # the cause, not a slow boot: Chromium refused to compile Pyodide's WebAssembly under this CSP
    assert any("Content Security" in line and "WebAssembly" in line for line in result["console"]), result["console"]
