// Call the extension's Python entry points: each takes one argument and returns JSON (parsed here).
//
// runPythonAsync is the entry JSPI needs: it lets the Python code suspend on WebGPU promises with
// pyodide.ffi.run_sync (bonsai.gpu.browser) while the page keeps painting and taking clicks.
let queue = Promise.resolve();  // one call at a time: a second would run while the first is suspended

export function callPython(pyodide, module, func, arg, options = {}) {
  const call = queue.then(() => run(pyodide, module, func, arg, options));
  queue = call.catch(() => {});
  return call;
}

async function run(pyodide, module, func, arg, { convert = true }) {
  const value = arg === undefined ? null : convert ? pyodide.toPy(arg) : arg;
  const name = `__bonsai_arg_${func}`;
  try {
    pyodide.globals.set(name, value);
    const json = await pyodide.runPythonAsync(`from ${module} import ${func} as __f\n__f(${name})`);
    return JSON.parse(json);
  } finally {
    pyodide.globals.delete(name);
    if (convert && value && value.destroy) value.destroy();
  }
}
