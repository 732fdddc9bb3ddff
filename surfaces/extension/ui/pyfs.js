// Put a model's bytes into Pyodide's file system (/models/NAME), where the Python reads it.
export function writeModelFile(pyodide, name, bytes) {
  pyodide.FS.mkdirTree("/models");
  const path = `/models/${safeName(name)}`;
  pyodide.FS.writeFile(path, bytes);
  return path;
}

export function safeName(name) {
  return name.replace(/[^A-Za-z0-9._-]/g, "_");
}
