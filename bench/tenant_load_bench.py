"""Load test of the tenant server: 2 tenants x 8 clients on one model, some hanging up; fairness, 429s, memory.

Starts `bonsai-tenant serve` (this repo's tenant package) in a subprocess with a queue of --queue
places and the paced stand-in model of tenant_load_model.py (the real RuntimeBackend and server, a
fixed reply at --token-ms per token; --model FILE serves a GGUF instead). Every client sends
--requests requests back to back (every other one streamed; the --heavy tenant's ask for --heavy-factor times more tokens, so
a first-come order would make the other wait behind it); in each tenant --hangups clients hang
up each request (streamed: after the first chunk; not streamed: after --hangup-after s). A 429 is
retried after its Retry-After. While it runs the server's RSS is sampled; afterwards each tenant
asks once more and the reply is checked. Prints a table and writes bench/results/tenant_load.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from results_file import write_results

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TENANTS = {"acme": "sk-load-acme-0123456789", "globex": "sk-load-globex-0123456789"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Server:
    """`bonsai-tenant serve` in a subprocess, with an RSS sampler."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        config = workdir / "tenants.toml"
        lines = [f"[server]\nqueue-size = {args.queue}\nrequest-timeout = {args.timeout}\n"]
        lines += [f'[tenants.{name}]\napi-key-env = "KEY_{name.upper()}"\n' for name in TENANTS]
        lines.append(f'[models.m]\n{f"path = {json.dumps(str(args.model))}" if args.model else ""}\n')
        config.write_text("".join(lines))
        self.log = workdir / "turns.jsonl"
        env = {**os.environ, **{f"KEY_{n.upper()}": k for n, k in TENANTS.items()},
               "PYTHONPATH": os.pathsep.join([str(REPO / "surfaces" / "tenant" / "src"), str(HERE)]),
               "BONSAI_LOAD_LOG": str(self.log), "BONSAI_LOAD_TOKEN_S": str(args.token_ms / 1000)}
        self.port = free_port()
        command = [sys.executable, "-m", "bonsai_tenant", "serve", "--config", str(config), "--port", str(self.port),
                   "--log-level", "warning"]
        if not args.model:
            command += ["--backend-factory", "tenant_load_model:make_backend"]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.samples: list[float] = []
        deadline = time.monotonic() + 120
        while not self._healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start: {self.process.stderr.read().decode() if self.process.stderr else ''}")
            time.sleep(0.1)
        self.samples.append(rss_mb(self.process.pid))
        self._sampling = True
        threading.Thread(target=self._sample, daemon=True).start()

    def _healthy(self) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        except OSError:
            return False

    def _sample(self) -> None:
        while self._sampling and self.process.poll() is None:
            self.samples.append(rss_mb(self.process.pid))
            time.sleep(0.2)

    def turns(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def stop(self) -> None:
        self._sampling = False
        self.process.terminate()
        self.process.wait(10)


def ask(port: int, key: str, body: dict, hang_up: float | None = None) -> tuple[int, float, dict, bytes]:
    """(status, seconds, headers, body); with `hang_up`, close after the first chunk (streamed) or that many s."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=hang_up if hang_up and not body.get("stream") else 120)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = conn.getresponse()
        if hang_up and response.status == 200 and body.get("stream"):
            response.read1(64)
            return -1, time.monotonic() - started, {}, b""
        data = response.read()
        return response.status, time.monotonic() - started, {k.lower(): v for k, v in response.getheaders()}, data
    except TimeoutError:
        return -1, time.monotonic() - started, {}, b""
    finally:
        conn.close()


def client(port: int, tenant: str, hangs: bool, args: argparse.Namespace, results: list[dict], lock: threading.Lock) -> None:
    for i in range(args.requests):
        stream = i % 2 == 0
        tokens = args.max_tokens * (args.heavy_factor if tenant == args.heavy else 1)
        body = {"model": "m", "stream": stream, "max_tokens": args.long_tokens if hangs else tokens,
                "messages": [{"role": "user", "content": f"{tenant} request {i}"}]}
        retries = 0
        while True:
            status, seconds, headers, _ = ask(port, TENANTS[tenant], body, args.hangup_after if hangs else None)
            if status != 429:
                break
            retries += 1
            with lock:
                results.append({"tenant": tenant, "status": 429, "seconds": seconds, "hangup": hangs})
            time.sleep(float(headers.get("retry-after", "1")))
        with lock:
            results.append({"tenant": tenant, "status": status, "seconds": seconds, "hangup": hangs, "retries": retries})


def summarize(results: list[dict], tenant: str) -> dict:
    mine = [r for r in results if r["tenant"] == tenant]
    ok = [r["seconds"] for r in mine if r["status"] == 200]
    q = statistics.quantiles(ok, n=20, method="inclusive") if len(ok) >= 2 else ok * 19 or [0.0] * 19
    return {"tenant": tenant, "answered": len(ok), "refused_429": sum(r["status"] == 429 for r in mine),
            "hung_up": sum(r["status"] == -1 for r in mine),
            "errors": sum(r["status"] not in (200, 429, -1) for r in mine),
            "p50_s": round(statistics.median(ok), 2) if ok else None, "p95_s": round(q[18], 2) if ok else None,
            "max_s": round(max(ok), 2) if ok else None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=8, help="clients per tenant")
    p.add_argument("--hangups", type=int, default=2, help="clients per tenant that hang up every request")
    p.add_argument("--requests", type=int, default=4, help="requests per client")
    p.add_argument("--max-tokens", type=int, default=24)
    p.add_argument("--heavy", default="acme", help="the tenant whose requests ask --heavy-factor times more tokens")
    p.add_argument("--heavy-factor", type=int, default=4)
    p.add_argument("--long-tokens", type=int, default=400, help="max_tokens of the requests that are hung up")
    p.add_argument("--hangup-after", type=float, default=0.3)
    p.add_argument("--token-ms", type=float, default=5.0, help="the stand-in model's pace")
    p.add_argument("--queue", type=int, default=8)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--model", type=Path, help="serve this GGUF instead of the stand-in (slow on lavapipe)")
    p.add_argument("--out", default=str(HERE / "results" / "tenant_load.json"))
    args = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="tenant-load-") as tmp:
        server = Server(args, Path(tmp))
        try:
            results: list[dict] = []
            lock = threading.Lock()
            threads = [threading.Thread(target=client, args=(server.port, tenant, c < args.hangups, args, results, lock))
                       for tenant in TENANTS for c in range(args.clients)]
            started = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.monotonic() - started
            time.sleep(1.0)  # let cancelled turns report
            after = {}
            for tenant, key in TENANTS.items():
                status, seconds, _, raw = ask(server.port, key, {"model": "m", "max_tokens": 9, "messages": [
                    {"role": "user", "content": "after the load"}]})
                text = json.loads(raw)["choices"][0]["message"]["content"] if status == 200 else None
                after[tenant] = {"status": status, "seconds": round(seconds, 2), "text": text}
            turns = server.turns()
        finally:
            server.stop()
    rows = [summarize(results, tenant) for tenant in TENANTS]
    cancelled = [t for t in turns if t["cancelled"]]
    memory = {"start_mb": round(server.samples[0], 1), "peak_mb": round(max(server.samples), 1),
              "end_mb": round(server.samples[-1], 1)}
    print(f"tenant load: {len(TENANTS)} tenants x {args.clients} clients ({args.hangups} hanging up each), "
          f"{args.requests} requests each ({args.heavy}'s {args.heavy_factor}x longer), queue {args.queue}, "
          f"{args.token_ms:g} ms/token, {wall:.1f} s")
    print("| tenant | answered | 429 (then retried) | hung up | errors | p50 s | p95 s | max s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['tenant']} | {r['answered']} | {r['refused_429']} | {r['hung_up']} | {r['errors']} | "
              f"{r['p50_s']} | {r['p95_s']} | {r['max_s']} |")
    mean_cut = statistics.mean(t["tokens"] for t in cancelled) if cancelled else 0
    if args.model:
        print("turns: not logged for a real model (the stand-in model logs each turn)")
    else:
        print(f"turns run {len(turns)}, cancelled {len(cancelled)} (mean {mean_cut:.0f} of {args.long_tokens} tokens "
              "generated before the stop)")
    print(f"server RSS MB: start {memory['start_mb']}, peak {memory['peak_mb']}, end {memory['end_mb']}")
    for tenant, a in after.items():
        print(f"after the load, {tenant}: {a['status']} in {a['seconds']} s: {a['text']!r}")
    write_results(args.out, {"args": {k: str(v) for k, v in vars(args).items()}, "wall_s": round(wall, 1),
                             "tenants": rows, "turns": len(turns), "cancelled_turns": len(cancelled),
                             "mean_tokens_before_cancel": round(mean_cut, 1), "memory": memory, "after": after})


if __name__ == "__main__":
    main()
