// Where a model's bytes come from: a URL (streamed, with its size when the server says) or a picked or dropped file.
export async function fromUrl(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  const name = decodeURIComponent(new URL(url).pathname.split("/").pop() || "model.gguf");
  const total = Number(response.headers.get("content-length")) || 0;
  return { name, total, chunks: response.body };
}

export function fromFile(file) {
  return { name: file.name, total: file.size, chunks: file.stream() };
}
