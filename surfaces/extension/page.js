// Bonsai's extension page: boot Pyodide from the packaged files, load the synced Python closure into
// its file system, run the checks the URL names on WebGPU, and show the results (and any error).
//
// URL parameters (tests use them; a person just opens the page):
//   checks=attention,verbs,device_loss   checks to run ("" for none; default "attention")
//   mutate=NAME            build the attention kernel with a deliberate bug (mutation tests)
//   model=URL              fetch a GGUF model from URL (e.g. http://127.0.0.1:PORT/model.gguf)
//   prompt=TEXT&tokens=N   with a model: greedy-decode N tokens (default 4) after TEXT
//   kv=MODE                the KV cache mode for it (default q4: 4-bit rows, f16 scale; any row mode)
//   lose_after=N           destroy the GPU device before decode step N (the engine must recover)
//   boot_timeout=SECONDS   give up starting Pyodide after this long, visibly (default 120)
// The outcome is shown in the page and left in `window.__result` ({ok, checks, error, …}).
import { loadPyodide } from "./pyodide/pyodide.mjs";

const $ = (id) => document.getElementById(id);

function setStatus(text) {
  $("status").textContent = text;
  console.log(`bonsai: ${text}`);
}

function showError(where, error) {
  const box = $("error");
  box.hidden = false;
  const title = document.createElement("strong");
  title.textContent = `${where}: ${error.type}`;
  const body = document.createElement("pre");
  body.textContent = error.message + (error.traceback ? `\n\n${error.traceback}` : "");
  box.append(title, body);
  console.error(`bonsai: ${where}: ${error.type}: ${error.message}`);
}

function show(result) {
  window.__result = result;
  $("checks").textContent = JSON.stringify(result.checks, null, 2);
  if (result.error) showError("Runtime", result.error);
  for (const [name, check] of Object.entries(result.checks || {})) {
    if (check.error) showError(`Check "${name}"`, check.error);
  }
  const ran = Object.keys(result.checks || {}).length > 0;
  setStatus(result.error ? "Stopped by an error — see below." : !result.ok ? "A check failed — see below."
    : ran ? "All checks passed." : "Ready: choose a model file.");
  $("status").className = result.ok ? "ok" : "bad";
}

class BootTimeout extends Error {
  get name() { return "BootTimeout"; }
}

function withTimeout(promise, seconds, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BootTimeout(`${what} did not finish in ${seconds} s. ` +
      "If the console shows a WebAssembly/CSP error, the extension's content_security_policy must allow " +
      "'wasm-unsafe-eval'.")), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function boot(timeoutSeconds) {
  setStatus("Loading Pyodide…");
  const indexURL = new URL("./pyodide/", import.meta.url).href;
  const pyodide = await withTimeout(loadPyodide({ indexURL }), timeoutSeconds, "Starting Pyodide");
  setStatus("Loading the Bonsai runtime…");
  const files = await (await fetch("python/files.json")).json();
  for (const rel of files) {
    const response = await fetch(`python/${rel}`);
    if (!response.ok) throw new Error(`python/${rel}: HTTP ${response.status}`);
    const path = `/bonsai/${rel}`;
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    pyodide.FS.writeFile(path, new Uint8Array(await response.arrayBuffer()));
  }
  pyodide.runPython("import sys; sys.path.insert(0, '/bonsai')");
  return pyodide;
}

function writeModel(pyodide, name, bytes) {
  pyodide.FS.mkdirTree("/models");
  const path = `/models/${name.replace(/[^A-Za-z0-9._-]/g, "_")}`;
  pyodide.FS.writeFile(path, bytes);
  return path;
}

async function fetchModel(pyodide, url) {
  setStatus(`Fetching the model ${url}…`);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  const name = decodeURIComponent(new URL(url).pathname.split("/").pop() || "model.gguf");
  return { name, path: writeModel(pyodide, name, new Uint8Array(await response.arrayBuffer())) };
}

async function runChecks(pyodide, params) {
  setStatus("Running checks on WebGPU…");
  const pyParams = pyodide.toPy(params);
  try {
    pyodide.globals.set("__bonsai_params", pyParams);
    // runPythonAsync: the entry JSPI needs so Python can block on GPU promises with run_sync.
    const json = await pyodide.runPythonAsync(
      "from bonsai_extension.page import run as __bonsai_run\n__bonsai_run(__bonsai_params)");
    return JSON.parse(json);
  } finally {
    pyodide.globals.delete("__bonsai_params");
    pyParams.destroy();
  }
}

function bootError(error) {
  return { ok: false, checks: {}, error: { type: error.name || "Error", message: String(error.message || error) } };
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
  };
  let pyodide;
  try {
    pyodide = await boot(Number(query.get("boot_timeout") || 120));
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
    $("error").replaceChildren();
    $("error").hidden = true;
    try {
      const path = writeModel(pyodide, file.name, new Uint8Array(await file.arrayBuffer()));
      const result = await runChecks(pyodide, { checks: [], model_path: path, model_name: file.name });
      $("model").textContent = JSON.stringify(result.checks.model, null, 2);
      show(result);
    } catch (error) {
      show(bootError(error));
    }
  });
}

main();
