// Is there a WebGPU adapter? Asked before Python boots or a model is chosen, so a browser without one
// is told what to change instead of being handed a model it cannot run.
export class NoWebGpu extends Error {
  get name() { return "NoWebGpu"; }
}

const WHAT_TO_DO = "Bonsai runs the model on this computer's GPU through WebGPU. Use Chrome or Edge 113 or " +
  "newer; on Linux (and where chrome://gpu says WebGPU is disabled) turn on chrome://flags/#enable-unsafe-webgpu " +
  "and chrome://flags/#enable-vulkan, make sure \"Use graphics acceleration when available\" is on in Settings → " +
  "System, then restart the browser.";

// The adapter's description ("vendor architecture", or "unknown"); throws NoWebGpu saying what to do.
export async function requireWebGpu() {
  if (!navigator.gpu) {
    throw new NoWebGpu(`This browser offers no WebGPU (navigator.gpu is missing). ${WHAT_TO_DO}`);
  }
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (error) {
    throw new NoWebGpu(`WebGPU refused to give an adapter (${error.message || error}). ${WHAT_TO_DO}`);
  }
  if (!adapter) {
    throw new NoWebGpu("WebGPU is present but found no usable GPU adapter (the GPU or its driver may be " +
      `blocked: see chrome://gpu). ${WHAT_TO_DO}`);
  }
  const info = adapter.info || {};
  return [info.vendor, info.architecture].filter(Boolean).join(" ") || "unknown";
}
