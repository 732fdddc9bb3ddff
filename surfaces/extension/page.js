// Bonsai's diagnostics page (linked from the chat panel): boot Pyodide, run the checks the URL names
// on WebGPU, and show the results (and any error).
//
// URL parameters (tests use them; a person just opens the page):
//   checks=attention,verbs,rope,device_loss   checks to run ("" for none; default "attention")
//   mutate=NAME            build the attention kernel with a deliberate bug (mutation tests)
//   model=URL              fetch a GGUF model from URL (e.g. http://127.0.0.1:PORT/model.gguf)
//   prompt=TEXT&tokens=N   with a model: greedy-decode N tokens (default 4) after TEXT
//   kv=MODE                the KV cache mode for it (default q4: 4-bit rows, f16 scale; any row mode)
//   lose_after=N           destroy the GPU device before decode step N (the engine must recover)
//   kernels=gpu            generate with the kernels a GPU adapter gets, even on a CPU one (SwiftShader):
//                          Chrome's shader compiler must accept every kernel a user's GPU will run
//   forced=ID,ID,…         with a model: long forced decoding of these token ids (log-prob and argmax
//                          per position); kv=MODE and window=N (default 2048) set its cache
//   boot_timeout=SECONDS   give up starting Pyodide after this long, visibly (default 120)
// The outcome is shown in the page and left in `window.__result` ({ok, checks, error, …}).
import { boot } from "./ui/boot.js";
import { clearErrors, describeJs, showError } from "./ui/errors.js";
import { writeModelFile } from "./ui/pyfs.js";
import { callPython } from "./ui/python.js";

const $ = (id) => document.getElementById(id);

function setStatus(text) {
  $("status").textContent = text;
  console.log(`bonsai: ${text}`);
}

function show(result) {
  window.__result = result;
  $("checks").textContent = JSON.stringify(result.checks, null, 2);
  if (result.error) showError($("error"), "Runtime", result.error);
  for (const [name, check] of Object.entries(result.checks || {})) {
    if (check.error) showError($("error"), `Check "${name}"`, check.error);
  }
  const ran = Object.keys(result.checks || {}).length > 0;
  setStatus(result.error ? "Stopped by an error — see below." : !result.ok ? "A check failed — see below."
    : ran ? "All checks passed." : "Ready: choose a model file.");
  $("status").className = result.ok ? "ok" : "bad";
}

async function fetchModel(pyodide, url) {
  setStatus(`Fetching the model ${url}…`);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  const name = decodeURIComponent(new URL(url).pathname.split("/").pop() || "model.gguf");
  return { name, path: writeModelFile(pyodide, name, new Uint8Array(await response.arrayBuffer())) };
}

async function runChecks(pyodide, params) {
  setStatus("Running checks on WebGPU…");
  return callPython(pyodide, "bonsai_extension.page", "run", params);
}

function bootError(error) {
  return { ok: false, checks: {}, error: describeJs(error) };
}

async function main() {
  const query = new URLSearchParams(location.search);
  const params = {
    checks: (query.has("checks") ? query.get("checks") : "attention").split(",").filter(Boolean),
    mutate: query.get("mutate") || "",
    prompt: query.get("prompt") || "",
    tokens: Number(query.get("tokens") || 4),
    kv: query.get("kv") || "q4",
    lose_after: Number(query.get("lose_after") || 0),
    kernels: query.get("kernels") || "",
    forced: (query.get("forced") || "").split(",").filter(Boolean).map(Number),
    window: Number(query.get("window") || 2048),
  };
  let pyodide;
  try {
    pyodide = await boot(Number(query.get("boot_timeout") || 120), (_, detail) => setStatus(detail));
    if (query.get("model")) {
      const model = await fetchModel(pyodide, query.get("model"));
      params.model_path = model.path;
      params.model_name = model.name;
    }
    show(await runChecks(pyodide, params));
  } catch (error) {
    show(bootError(error));
  }
  if (pyodide) enablePicker(pyodide);
}

function enablePicker(pyodide) {
  const input = $("model-file");
  input.disabled = false;
  input.addEventListener("change", async () => {
    const file = input.files[0];
    if (!file) return;
    clearErrors($("error"));
    try {
      const path = writeModelFile(pyodide, file.name, new Uint8Array(await file.arrayBuffer()));
      const result = await runChecks(pyodide, { checks: [], model_path: path, model_name: file.name });
      $("model").textContent = JSON.stringify(result.checks.model, null, 2);
      show(result);
    } catch (error) {
      show(bootError(error));
    }
  });
}

main();
