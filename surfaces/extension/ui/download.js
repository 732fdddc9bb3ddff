// A catalogued model in one click: its published file fetched into OPFS (resumed with an HTTP Range
// request after an interruption), then the model read out of it (a wheel is a zip) as a stream.
const DIR = "downloads";

export class DownloadError extends Error {
  get name() { return "DownloadError"; }
}

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

async function directory() {
  return (await navigator.storage.getDirectory()).getDirectoryHandle(DIR, { create: true });
}

const fileName = (url) => decodeURIComponent(new URL(url).pathname.split("/").pop());

// Forget what was downloaded from `url` (after the model was stored, or when it proved damaged).
export async function discardDownload(url) {
  await (await directory()).removeEntry(fileName(url)).catch(() => {});
}

// The file at `url` in OPFS, as a File; what an earlier attempt stored is kept and only the rest is asked
// for (its size comes from the server). onProgress(bytes, size). Never goes through the HTTP cache.
export async function fetchResumable(url, onProgress = () => {}) {
  const handle = await (await directory()).getFileHandle(fileName(url), { create: true });
  let have = (await handle.getFile()).size;
  let response;
  try {
    response = await fetch(url, { cache: "no-store", headers: have ? { Range: `bytes=${have}-` } : {} });
  } catch (error) {
    throw new DownloadError(`${url} could not be fetched (${error.name}: ${error.message}). Check the network ` +
      `connection${have ? `; the ${mb(have)} already downloaded are kept` : ""}, then press Download again.`);
  }
  if (response.status === 416 && have) return handle.getFile(); // all of it arrived before
  let size;
  if (response.status === 206) {
    size = Number((response.headers.get("content-range") || "").split("/")[1]);
    if (!size) throw new DownloadError(`${url}: a partial answer without its total size (Content-Range)`);
  } else if (response.ok) {
    have = 0; // the server sent the whole file: start over
    size = Number(response.headers.get("content-length")) || 0;
  } else {
    throw new DownloadError(`${url}: HTTP ${response.status} ${response.statusText}`.trim());
  }
  const writable = await handle.createWritable({ keepExistingData: have > 0 });
  await writable.seek(have);
  let done = have;
  onProgress(done, size);
  try {
    for await (const chunk of response.body) {
      await writable.write(chunk);
      done += chunk.length;
      onProgress(done, size);
    }
  } catch (error) {
    await writable.close(); // keep what arrived: the next attempt resumes from here
    throw new DownloadError(`${url}: the download stopped at ${mb(done)} of ${mb(size)} (${error.message}). ` +
      "What arrived is kept: press Download again to resume.");
  }
  await writable.close();
  if (size && done !== size) {
    await discardDownload(url);
    throw new DownloadError(`${url}: ${done} bytes arrived, the server announced ${size}; discarded.`);
  }
  return handle.getFile();
}

// `member` of the zip `file` as {size, stream} (stored or deflated); DownloadError names what is wrong.
export async function zipMember(file, member) {
  const tailSize = Math.min(file.size, 65557); // the end record and the longest comment
  const tail = new DataView(await file.slice(file.size - tailSize).arrayBuffer());
  let end = -1;
  for (let i = tail.byteLength - 22; i >= 0 && end < 0; i--) if (tail.getUint32(i, true) === 0x06054b50) end = i;
  if (end < 0) throw new DownloadError(`${file.name}: not a zip file (no end of central directory)`);
  const cdSize = tail.getUint32(end + 12, true);
  const cdOffset = tail.getUint32(end + 16, true);
  const cd = new DataView(await file.slice(cdOffset, cdOffset + cdSize).arrayBuffer());
  const decoder = new TextDecoder();
  for (let p = 0; p + 46 <= cdSize;) {
    if (cd.getUint32(p, true) !== 0x02014b50) throw new DownloadError(`${file.name}: damaged zip directory at ${cdOffset + p}`);
    const method = cd.getUint16(p + 10, true);
    const compressed = cd.getUint32(p + 20, true);
    const size = cd.getUint32(p + 24, true);
    const nameLength = cd.getUint16(p + 28, true);
    const skip = nameLength + cd.getUint16(p + 30, true) + cd.getUint16(p + 32, true);
    const offset = cd.getUint32(p + 42, true);
    if (decoder.decode(new Uint8Array(cd.buffer, p + 46, nameLength)) === member) {
      const local = new DataView(await file.slice(offset, offset + 30).arrayBuffer());
      const start = offset + 30 + local.getUint16(26, true) + local.getUint16(28, true);
      const body = file.slice(start, start + compressed).stream();
      if (method === 0) return { size, stream: body };
      if (method === 8) return { size, stream: body.pipeThrough(new DecompressionStream("deflate-raw")) };
      throw new DownloadError(`${file.name}: ${member} uses zip method ${method} (only stored or deflated are read)`);
    }
    p += 46 + skip;
  }
  throw new DownloadError(`${file.name}: holds no ${member}`);
}
