// The one model file kept in the origin-private file system (OPFS), and its record in chrome.storage.
//
// A new file is written under a temporary name and renamed only once the panel has checked it, so a
// failed or interrupted load leaves nothing a later start could take for a model. A stored file is
// reused only when its size and SHA-256 still match the record; leftovers of any kind are removed.
const DIR = "models";
const TEMP_PREFIX = ".incoming-";
const RECORD = "model"; // chrome.storage.local: {name, size, sha256}

export class StoredModelChanged extends Error {
  get name() { return "StoredModelChanged"; }
}

async function directory() {
  return (await navigator.storage.getDirectory()).getDirectoryHandle(DIR, { create: true });
}

export async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function record() {
  return (await chrome.storage.local.get(RECORD))[RECORD] || null;
}

// Every file name in the models directory (tests and the settings view use it).
export async function listFiles() {
  const names = [];
  for await (const name of (await directory()).keys()) names.push(name);
  return names.sort();
}

async function removeAllBut(dir, keep) {
  for (const name of await listFiles()) {
    if (name !== keep) await dir.removeEntry(name).catch(() => {});
  }
}

// The stored model as {name, size, sha256, bytes}, or null when there is none. A file that no longer
// matches its record is removed with the record, and StoredModelChanged says so.
export async function storedModel() {
  const dir = await directory();
  const rec = await record();
  await removeAllBut(dir, rec && rec.name);
  if (!rec) return null;
  let file;
  try {
    file = await (await dir.getFileHandle(rec.name)).getFile();
  } catch {
    await forgetModel();
    return null;
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const digest = bytes.length === rec.size ? await sha256(bytes) : "";
  if (digest !== rec.sha256) {
    await forgetModel();
    throw new StoredModelChanged(`${rec.name}: the stored model file changed since it was stored ` +
      `(${bytes.length} bytes, expected ${rec.size} with SHA-256 ${rec.sha256.slice(0, 16)}…); it was removed. ` +
      "Choose the model again.");
  }
  return { ...rec, bytes };
}

// Write `chunks` (an async iterable of Uint8Array) to a temporary file; onProgress(bytes so far).
// Returns {name, size, sha256, bytes, commit(), discard()}: commit() makes it the stored model.
export async function writeIncoming(name, chunks, onProgress = () => {}) {
  const dir = await directory();
  const tempName = TEMP_PREFIX + name;
  const handle = await dir.getFileHandle(tempName, { create: true });
  const writable = await handle.createWritable();
  let size = 0;
  try {
    for await (const chunk of chunks) {
      await writable.write(chunk);
      size += chunk.length;
      onProgress(size);
    }
    await writable.close();
  } catch (error) {
    await writable.abort().catch(() => {});
    await dir.removeEntry(tempName).catch(() => {});
    throw error;
  }
  const bytes = new Uint8Array(await (await handle.getFile()).arrayBuffer());
  const digest = await sha256(bytes);
  return {
    name, size, sha256: digest, bytes,
    async commit() {
      await removeAllBut(dir, tempName);
      await handle.move(name);
      await chrome.storage.local.set({ [RECORD]: { name, size, sha256: digest } });
    },
    async discard() {
      await dir.removeEntry(tempName).catch(() => {});
    },
  };
}

export async function forgetModel() {
  await chrome.storage.local.remove(RECORD);
  await removeAllBut(await directory(), null);
}
