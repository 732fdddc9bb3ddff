// The panel's settings (KV mode, max new tokens, temperature, tools), kept in chrome.storage.local.
const KEY = "settings";
export const DEFAULTS = Object.freeze({
  kv: "q4res", maxNewTokens: 256, temperature: 0, tools: ["calculator", "clock", "read_page"], toolRequired: false,
});

export async function loadSettings() {
  const stored = (await chrome.storage.local.get(KEY))[KEY] || {};
  return { ...DEFAULTS, ...stored };
}

export async function saveSettings(settings) {
  await chrome.storage.local.set({ [KEY]: settings });
}

// What the Python session takes (bonsai_extension.session.Settings).
export function forPython(settings) {
  return {
    max_new_tokens: settings.maxNewTokens, temperature: settings.temperature, tools: settings.tools,
    tool_choice: settings.toolRequired ? "required" : "auto",
  };
}

// The form shows `settings`; every change is read back, saved, and handed to onChange(new, old).
export function bindForm(form, settings, kvModes, onChange) {
  const kv = form.elements.kv;
  kv.replaceChildren(...kvModes.map((mode) => new Option(mode, mode)));
  const show = (s) => {
    kv.value = s.kv;
    form.elements.maxNewTokens.value = s.maxNewTokens;
    form.elements.temperature.value = s.temperature;
    for (const box of form.querySelectorAll('input[name="tools"]')) box.checked = s.tools.includes(box.value);
    form.elements.toolRequired.checked = s.toolRequired;
  };
  show(settings);
  let current = settings;
  form.addEventListener("change", async () => {
    const next = {
      kv: kv.value,
      maxNewTokens: Math.max(1, Number(form.elements.maxNewTokens.value) || DEFAULTS.maxNewTokens),
      temperature: Math.max(0, Number(form.elements.temperature.value) || 0),
      tools: [...form.querySelectorAll('input[name="tools"]:checked')].map((box) => box.value),
      toolRequired: form.elements.toolRequired.checked,
    };
    const old = current;
    current = next;
    await saveSettings(next);
    onChange(next, old);
  });
}
