// Bonsai's chat side panel: start Python, load the stored model (or let the user choose one), then chat.
//
// What the panel is doing is also left in `window.__bonsai` (tests read it): {phase: "booting" |
// "choose-model" | "loading" | "ready" | "generating" | "error", progress: {boot, model, shaders},
// model: {source: "opfs" | "url" | "file", name, ...load timings}, turns: [...], errors: [...]}.
import { boot } from "./ui/boot.js";
import { ChatView } from "./ui/chat_view.js";
import { clearErrors, describeJs, showError } from "./ui/errors.js";
import { discardDownload, DownloadError, fetchResumable, zipMember } from "./ui/download.js";
import { fromFile, fromUrl } from "./ui/model_source.js";
import { forgetModel, StoredModelChanged, storedModel, writeIncoming } from "./ui/opfs.js";
import { allowAllSites, readActiveTab } from "./ui/page_reader.js";
import { writeModelFile } from "./ui/pyfs.js";
import { callPython } from "./ui/python.js";
import { bindForm, forPython, loadSettings } from "./ui/settings.js";
import { NoWebGpu, requireWebGpu } from "./ui/webgpu.js";

const $ = (id) => document.getElementById(id);
const state = (window.__bonsai = { phase: "booting", progress: {}, model: null, turns: [], errors: [] });
const view = new ChatView($("messages"));
let pyodide;
let settings;
let modelPath = null;
let stopRequested = false;

class PanelError extends Error {
  constructor(where, error) {
    super(error.message);
    this.where = where;
    this.error = error;
  }
}

const py = async (func, arg, options) => {
  const result = await callPython(pyodide, "bonsai_extension.panel", func, arg, options);
  if (!result.ok) throw new PanelError(func === "send" ? "Chat" : "Model", result.error);
  return result;
};

function setPhase(phase, status) {
  state.phase = phase;
  $("status").textContent = status;
  $("status").className = phase === "error" ? "bad" : "";
  $("chooser").hidden = phase !== "choose-model";
  $("chat").hidden = !["ready", "generating"].includes(phase);
  $("send").disabled = phase !== "ready";
  $("new-chat").disabled = phase !== "ready";
  $("stop").disabled = phase !== "generating";
  console.log(`bonsai: ${phase}: ${status}`);
}

function report(where, error) {
  const described = error instanceof PanelError ? error.error : describeJs(error);
  state.errors.push({ where: error.where || where, ...described });
  showError($("error"), error.where || where, described);
}

function progress(bar, fraction, detail) {
  const element = $(`progress-${bar}`);
  if (fraction < 0) element.removeAttribute("value");
  else element.value = fraction;
  $(`detail-${bar}`).textContent = detail;
  state.progress[bar] = { fraction, detail };
}

// The prompt being read (the system prompt at load, each message's prompt in a turn): in the status line.
function promptProgress({ fraction, detail }) {
  state.progress.prompt = { fraction, detail };
  if (!stopRequested) $("status").textContent = `${detail}…`;
}

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

// What Python calls back while it works (bonsai_extension.bridge.Bridge).
const hooks = {
  onEvent(kind, json) {
    const data = JSON.parse(json);
    if (kind === "progress" && data.phase === "prompt") promptProgress(data);
    else if (kind === "progress") progress(data.phase === "weights" ? "model" : data.phase, data.fraction, data.detail);
    else if (kind === "token") view.append(data.text);
    else if (kind === "step") view.showStep(data);
  },
  stopRequested: () => stopRequested,
  breathe: () => new Promise((resolve) => setTimeout(resolve, 0)),
  readActiveTab,
};

async function loadEngine() {
  setPhase("loading", `Loading ${state.model.name} onto the GPU (KV cache ${settings.kv})…`);
  const known = (await chrome.storage.local.get("shaders"))?.shaders?.[settings.kv] || 0;
  const loaded = await py("load_model", { path: modelPath, name: state.model.name, kv: settings.kv,
    settings: forPython(settings), expected_shaders: known });
  await chrome.storage.local.set({ shaders: { ...(await chrome.storage.local.get("shaders")).shaders,
    [settings.kv]: loaded.shaders } });
  Object.assign(state.model, loaded);
  progress("model", 1, `${state.model.name}: ${mb(loaded.model.weight_bytes)} on the GPU in ${loaded.load_s} s`);
  setPhase("ready", `${state.model.name} is ready (${loaded.adapter}, KV cache ${settings.kv}).`);
}

// A model from a URL, a file or a download: stored under a temporary name, checked (against
// `source.sha256` where the source pins one), then kept for next time.
async function loadNew(source, how) {
  clearErrors($("error"));
  setPhase("loading", `Storing ${source.name} in this browser…`);
  const incoming = await writeIncoming(source.name, source.chunks, (size) =>
    progress("model", source.total ? size / source.total : -1,
      `stored ${mb(size)}${source.total ? ` of ${mb(source.total)}` : ""}`));
  try {
    if (source.sha256 && incoming.sha256 !== source.sha256) {
      throw new DownloadError(`${source.name}: SHA-256 ${incoming.sha256} is not the pinned ${source.sha256}; ` +
        "the download is damaged and was discarded. Press Download to fetch it again.");
    }
    modelPath = writeModelFile(pyodide, incoming.name, incoming.bytes);
    await py("inspect_model", { path: modelPath, name: incoming.name, sha256: incoming.sha256 });
    await incoming.commit();
  } catch (error) {
    await incoming.discard();
    throw error;
  }
  state.model = { source: how, name: incoming.name, size: incoming.size };
  await loadEngine();
}

async function loadStored() {
  setPhase("loading", "Looking for a stored model…");
  let stored = null;
  try {
    stored = await storedModel();
  } catch (error) {
    if (!(error instanceof StoredModelChanged)) throw error;
    report("Stored model", error);
  }
  if (!stored) {
    setPhase("choose-model", "Choose a model to start.");
    return;
  }
  progress("model", 0, `${stored.name}: found in this browser (${mb(stored.size)})`);
  modelPath = writeModelFile(pyodide, stored.name, stored.bytes);
  state.model = { source: "opfs", name: stored.name, size: stored.size };
  await loadEngine();
}

async function send(text) {
  stopRequested = false;
  state.stopping = false;
  setPhase("generating", "Thinking…");
  view.addUser(text);
  view.startReply();
  try {
    const turn = await py("send", { text, settings: forPython(settings) });
    state.turns.push(turn);
    view.finish(turn);
    const speed = `${turn.tokens_per_s.toFixed(2)} tokens/s`;
    setPhase("ready", turn.stop_reason === "stopped" ? "Stopped."
      : turn.stop_reason === "length" ? `Cut off at the limit of ${settings.maxNewTokens} new tokens (Settings) — ${speed}` : speed);
  } catch (error) {
    view.finish({ stop_reason: "stopped" });
    report("Chat", error);
    setPhase("ready", "The last reply failed — see above.");
  }
}

// fn's failure is reported and leaves the panel in `fallback` (a phase) with `status`.
function guarded(where, fallback, status, fn) {
  return async (...args) => {
    try {
      await fn(...args);
    } catch (error) {
      report(where, error);
      setPhase(fallback, status);
    }
  };
}

// A catalogued model: downloaded (resumable) from where it is published, or from the mirror an
// administrator set in chrome.storage.local `modelMirror` (a base URL holding the same file names).
async function download(entry) {
  clearErrors($("error"));
  const mirror = (await chrome.storage.local.get("modelMirror")).modelMirror;
  const url = mirror ? `${mirror.replace(/\/$/, "")}/${entry.url.split("/").pop()}` : entry.url;
  setPhase("loading", `Downloading ${entry.name} from ${new URL(url).host}…`);
  const file = await fetchResumable(url, (done, total) => progress("model", total ? done / total : -1,
    `${entry.name}: downloaded ${mb(done)}${total ? ` of ${mb(total)}` : ""}`));
  const member = await zipMember(file, entry.member);
  try {
    await loadNew({ name: entry.name, total: member.size, chunks: member.stream, sha256: entry.sha256 }, "download");
  } catch (error) {
    if (error instanceof DownloadError || error?.error?.type === "ModelChecksumError") await discardDownload(url);
    throw error;
  }
  await discardDownload(url); // the model is stored; the published file is not needed again
}

function showCatalog(catalog) {
  const failed = "The download did not finish — see above. Press Download to resume, or choose a file.";
  $("catalog").replaceChildren(...catalog.map((entry, i) => {
    const item = document.createElement("li");
    const name = document.createElement("strong");
    name.textContent = entry.name;
    if (i === 0) name.id = "suggested-name";
    const about = document.createElement("span");
    about.textContent = ` — ${entry.description}. ${mb(entry.size)} (a ${mb(entry.download_size)} download from ` +
      `${entry.published}), licence ${entry.licence}. SHA-256 `;
    const hash = document.createElement("code");
    hash.textContent = entry.sha256;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "download";
    button.textContent = "Download";
    button.addEventListener("click", guarded("Download", "choose-model", failed, () => download(entry)));
    item.append(name, about, hash, " ", button);
    return item;
  }));
}

function wireChooser() {
  const failed = "That model could not be used — see above. Choose another.";
  const loadFile = guarded("Model", "choose-model", failed, (file) => loadNew(fromFile(file), "file"));
  $("model-file").addEventListener("change", () => $("model-file").files[0] && loadFile($("model-file").files[0]));
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    if (event.dataTransfer.files[0]) loadFile(event.dataTransfer.files[0]);
  });
  $("url-form").addEventListener("submit", guarded("Model", "choose-model", failed, async (event) => {
    event.preventDefault();
    await loadNew(await fromUrl($("model-url").value), "url");
  }));
}

function wireChat() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("prompt").value.trim();
    if (!text || state.phase !== "ready") return;
    $("prompt").value = "";
    send(text);
  });
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => {
    stopRequested = true;
    $("stop").disabled = true;
    $("status").textContent = "Stopping…";  // Python sees it before its next prompt batch or token
    state.stopping = true;
  });
  $("new-chat").addEventListener("click", guarded("Chat", "ready", "Could not start a new chat.", async () => {
    await py("new_chat");
    view.clear();
    state.turns = [];
    clearErrors($("error"));
  }));
}

function wireSettings(kvModes) {
  $("open-settings").addEventListener("click", () => {
    $("settings").hidden = !$("settings").hidden;
    $("open-settings").setAttribute("aria-expanded", String(!$("settings").hidden));
  });
  const failed = "Could not reload the model with these settings — see above.";
  bindForm($("settings-form"), settings, kvModes, guarded("Settings", "error", failed, async (next, old) => {
    settings = next;
    if (next.kv !== old.kv && modelPath && state.phase === "ready") await loadEngine();
  }));
  $("allow-all-sites").addEventListener("click", async () => {
    const granted = await allowAllSites();
    $("status").textContent = granted ? "Bonsai may now read pages you ask about." : "Not allowed.";
  });
  $("forget-model").addEventListener("click", async () => {
    await forgetModel();
    location.reload();
  });
}

async function main() {
  try {
    await requireWebGpu(); // before Python boots and before any model is asked for
    pyodide = await boot(120, (fraction, detail) => progress("boot", fraction, detail));
    const info = await py("bind", hooks, { convert: false });
    settings = await loadSettings();
    showCatalog(info.catalog);
    wireChooser();
    wireChat();
    wireSettings(info.kv_modes);
    await loadStored();
  } catch (error) {
    const noGpu = error instanceof NoWebGpu;
    report(noGpu ? "WebGPU" : "Startup", error);
    setPhase("error", noGpu ? "Bonsai needs WebGPU — see above for how to turn it on." : "Bonsai could not start — see above.");
  }
}

main();
