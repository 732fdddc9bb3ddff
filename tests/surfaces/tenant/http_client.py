"""Plain-HTTP helpers for the tenant tests: JSON requests and server-sent-event parsing."""

from __future__ import annotations

import http.client
import json


def request(port: int, method: str, path: str, body: bytes | dict | None = None, key: str | None = None,
            timeout: float = 60) -> tuple[int, dict[str, str], bytes]:
    """Send one request to 127.0.0.1:port; (status, lower-cased headers, raw body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, raw


def sse_events(raw: bytes) -> list[dict | str]:
    """The `data:` payloads of an SSE body, JSON-decoded except the final "[DONE]"."""
    events: list[dict | str] = []
    for block in raw.decode().split("\n\n"):
        if block.startswith("data: "):
            payload = block[len("data: "):]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events
