// Where a model's bytes come from: a URL (streamed, with its size when the server says) or a picked or dropped file.
export class ModelUrlError extends Error {
  get name() { return "ModelUrlError"; }
}

const CORS_HINT = "If the address opens in a tab, the server does not let other sites read the file: it must send " +
  "the header Access-Control-Allow-Origin (CORS). Otherwise download the file and choose or drop it here.";

export async function fromUrl(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new ModelUrlError(`${JSON.stringify(url)} is not a URL (expected e.g. https://example.org/model.gguf).`);
  }
  let response;
  try {
    response = await fetch(parsed.href);
  } catch (error) {
    // the browser tells a page nothing more: a refused connection, a bad host and a CORS refusal look alike
    throw new ModelUrlError(`${parsed.href} could not be fetched (${error.name}: ${error.message}). ` +
      `Check the address and that the server is up. ${CORS_HINT}`);
  }
  if (!response.ok) throw new ModelUrlError(`${parsed.href}: HTTP ${response.status} ${response.statusText}`.trim());
  const name = decodeURIComponent(parsed.pathname.split("/").pop() || "model.gguf");
  const total = Number(response.headers.get("content-length")) || 0;
  return { name, total, chunks: response.body };
}

export function fromFile(file) {
  return { name: file.name, total: file.size, chunks: file.stream() };
}
