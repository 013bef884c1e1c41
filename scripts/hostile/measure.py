#!/usr/bin/env python3
"""Issue 10 figures: what hostile clients cost a `kobana-dunning serve` process.

    scripts/hostile/measure.py BINARY memory [--transport tokio] [--conns 500]
    scripts/hostile/measure.py BINARY slots  [--transport blocking] [--conns 200]

`memory`: N token-less connections each send a head declaring 2 MiB and then 2 MiB
minus one byte of body (the body never completes). Prints the server's RSS before, at its
peak, and 3 s after the connections are closed, and how many got which answer.

`slots`: N token-less connections each send a head declaring 1,000 bytes and then one
body byte every 2 s; meanwhile 20 authenticated requests are sent one after the other on
fresh connections. Prints how many of those got 200, and how many got 503 or nothing.

`--config FILE` passes a settings file to `serve` (e.g. `[limits]
max_unauthenticated_per_ip = 0`, so that every connection reaches the 401 path, as 500
different addresses would). Everything is on loopback and bounded in time (60 s for `memory`, 30 s for `slots`); the
server runs on a fresh data directory and is killed at the end.
"""

import argparse
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time

MIB = 1024 * 1024


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(binary, transport, data):
    port = free_port()
    extra = ["--config", CONFIG] if CONFIG else []
    proc = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
         "--transport", transport] + extra,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("the server did not start")


def token(binary, data):
    out = subprocess.run(
        [binary, "token", "--org", "demo", "--person", "ana@demo.example",
         "--data-dir", data], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


def head(auth, length):
    return (f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
            "Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/list\r\nContent-Length: {length}\r\n\r\n").encode()


def memory(binary, transport, conns, data, authenticated=False):
    proc, port = start(binary, transport, data)
    auth = f"Authorization: Bearer {token(binary, data)}\r\n" if authenticated else ""
    before = rss_mb(proc.pid)
    sel = selectors.DefaultSelector()
    body = b" " * (2 * MIB - 1)
    state = {}
    for _ in range(conns):
        s = socket.socket()
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        state[s] = [head(auth, 2 * MIB) + body, 0, b""]
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    peak = before
    deadline = time.time() + 60
    last_progress = time.time()
    while state and time.time() < deadline and time.time() - last_progress < 5:
        peak = max(peak, rss_mb(proc.pid))
        for key, ev in sel.select(timeout=0.1):
            s = key.fileobj
            data_, sent, got = state[s]
            try:
                if ev & selectors.EVENT_READ:
                    chunk = s.recv(65536)
                    if not chunk:
                        sel.unregister(s)
                        state[s][2] = got
                        state.pop(s)
                        done.append(got)
                        continue
                    state[s][2] = got + chunk
                    last_progress = time.time()
                if ev & selectors.EVENT_WRITE and sent < len(data_):
                    n = s.send(data_[sent:sent + 262144])
                    state[s][1] = sent + n
                    last_progress = time.time()
                    if state[s][1] >= len(data_):
                        sel.modify(s, selectors.EVENT_READ)
            except OSError:
                sel.unregister(s)
                done.append(state.pop(s)[2])
    peak = max(peak, rss_mb(proc.pid))
    answers = [g[9:12].decode() for g in done + [v[2] for v in state.values()] if g]
    counts = {code: answers.count(code) for code in sorted(set(answers))}
    answered = ", ".join(f"{n} answered {code}" for code, n in counts.items()) or "none answered"
    for s in list(state):
        s.close()
    for s in list(sel.get_map().values()):
        try:
            s.fileobj.close()
        except OSError:
            pass
    time.sleep(3)
    after = rss_mb(proc.pid)
    proc.kill()
    proc.wait()
    who = "authenticated" if authenticated else "token-less"
    print(f"{transport}: {conns} {who} connections x 2 MiB - 1: "
          f"RSS {before:.0f} MB before, {peak:.0f} MB peak, {after:.0f} MB 3 s after closing; "
          f"{answered}")


def slots(binary, transport, conns, data):
    proc, port = start(binary, transport, data)
    tok = token(binary, data)
    trickling = []
    for _ in range(conns):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(head("", 1000))
            trickling.append(s)
        except OSError:
            pass
    body = (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":'
            b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            b'"io.modelcontextprotocol/clientCapabilities":{}}}}')
    ok = refused = silent = 0
    deadline = time.time() + 30
    for i in range(20):
        if time.time() > deadline:
            silent += 20 - i
            break
        for s in list(trickling):
            try:
                s.setblocking(False)
                s.send(b" ")
            except OSError:
                pass
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
                c.sendall(head(f"Authorization: Bearer {tok}\r\n", len(body)) + body)
                got = c.recv(64)
                if got.startswith(b"HTTP/1.1 200"):
                    ok += 1
                elif got.startswith(b"HTTP/1.1 503"):
                    refused += 1
                else:
                    silent += 1
        except OSError:
            silent += 1
        time.sleep(0.5)
    alive = 0
    for s in trickling:
        try:
            s.setblocking(False)
            if s.recv(1, socket.MSG_PEEK) == b"":
                pass
            else:
                pass
        except BlockingIOError:
            alive += 1  # nothing to read: still held open by the server
        except OSError:
            pass
        s.close()
    proc.kill()
    proc.wait()
    print(f"{transport}: {conns} trickling token-less uploads: of 20 authenticated "
          f"requests {ok} got 200, {refused} 503, {silent} nothing; "
          f"{alive} trickling connections still held")


done = []
CONFIG = None

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("what", choices=["memory", "slots"])
    p.add_argument("--transport", default=None)
    p.add_argument("--conns", type=int, default=None)
    p.add_argument("--authenticated", action="store_true",
                   help="memory: send a valid token (the bodies are then read, within the budget)")
    p.add_argument("--config", default=None, help="a TOML file passed to serve --config")
    a = p.parse_args()
    CONFIG = a.config
    data = tempfile.mkdtemp(prefix="dunning-hostile-")
    try:
        if a.what == "memory":
            memory(a.binary, a.transport or "tokio", a.conns or 500, data, a.authenticated)
        else:
            slots(a.binary, a.transport or "blocking", a.conns or 200, data)
    finally:
        shutil.rmtree(data, ignore_errors=True)
