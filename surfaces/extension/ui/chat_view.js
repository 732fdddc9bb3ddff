// The conversation as the panel shows it: user messages, streamed replies, tool calls and their results.
export class ChatView {
  constructor(list) {
    this.list = list;
    this.reply = null; // the assistant message being written
    this.live = null; // its element receiving streamed text
  }

  clear() {
    this.list.replaceChildren();
    this.reply = this.live = null;
  }

  addUser(text) {
    this.list.append(element("li", "msg user", text));
  }

  startReply() {
    this.reply = element("li", "msg assistant");
    this.live = element("div", "streaming");
    this.reply.append(this.live);
    this.list.append(this.reply);
    this.reply.scrollIntoView({ block: "end" });
  }

  append(piece) {
    this.live.textContent += piece;
  }

  // A finished tool-loop step replaces its streamed text: the model's words, each call, each result.
  showStep(step) {
    const box = element("div", "step");
    if (step.text) box.append(element("div", "step-text", step.text));
    for (const call of step.calls) {
      const text = call.error ? `malformed call: ${call.error}` : `${call.name}(${JSON.stringify(call.arguments)})`;
      box.append(element("div", "call", text));
    }
    for (const result of step.results) {
      box.append(element("div", result.ok ? "result" : "result failed", result.content));
    }
    this.live.replaceWith(box);
    this.live = element("div", "streaming");
    box.after(this.live);
  }

  finish(turn) {
    const speed = turn.tokens_per_s === undefined ? "" : `${turn.tokens_per_s.toFixed(2)} tokens/s`;
    const info = turn.stop_reason === "stopped" ? "stopped"
      : turn.stop_reason === "length" ? `cut off: the reply reached the token limit (${speed})` : speed;
    if (!this.live.textContent) this.live.remove();
    this.reply.append(element("div", turn.stop_reason === "length" ? "turn-info cut" : "turn-info", info));
    this.reply = this.live = null;
  }
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
