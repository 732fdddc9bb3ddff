// Errors as the pages show them: a titled box naming where and what ({type, message, traceback?}).
export function showError(box, where, error) {
  box.hidden = false;
  const title = document.createElement("strong");
  title.textContent = `${where}: ${error.type}`;
  const body = document.createElement("pre");
  body.textContent = error.message + (error.traceback ? `\n\n${error.traceback}` : "");
  box.append(title, body);
  console.error(`bonsai: ${where}: ${error.type}: ${error.message}`);
}

export function clearErrors(box) {
  box.replaceChildren();
  box.hidden = true;
}

// A JS exception as {type, message}, the shape Python's errors arrive in.
export function describeJs(error) {
  return { type: error.name || "Error", message: String(error.message || error) };
}
