// Start Pyodide from the packaged files and copy the extension's Python (python/files.json) into its file system.
import { loadPyodide } from "../pyodide/pyodide.mjs";

export class BootTimeout extends Error {
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

// onProgress(fraction 0..1, detail): Pyodide itself counts as the first half, the Python files as the second.
export async function boot(timeoutSeconds, onProgress = () => {}) {
  onProgress(0, "Loading Pyodide…");
  const indexURL = new URL("../pyodide/", import.meta.url).href;
  const pyodide = await withTimeout(loadPyodide({ indexURL }), timeoutSeconds, "Starting Pyodide");
  const files = await (await fetch(new URL("../python/files.json", import.meta.url))).json();
  let done = 0;
  onProgress(0.5, "Loading the Bonsai runtime…");
  await Promise.all(files.map(async (rel) => {
    const response = await fetch(new URL(`../python/${rel}`, import.meta.url));
    if (!response.ok) throw new Error(`python/${rel}: HTTP ${response.status}`);
    const path = `/bonsai/${rel}`;
    const data = new Uint8Array(await response.arrayBuffer());
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    pyodide.FS.writeFile(path, data);
    done += 1;
    onProgress(0.5 + 0.5 * done / files.length, `Loading the Bonsai runtime… ${done}/${files.length} files`);
  }));
  pyodide.runPython("import sys; sys.path.insert(0, '/bonsai')");
  onProgress(1, `Python ready (${files.length} files)`);
  return pyodide;
}
