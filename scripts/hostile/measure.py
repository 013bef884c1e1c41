#!/usr/bin/env python3
"""Hardening figures: what hostile clients cost a `kobana-dunning serve` process.

    scripts/hostile/measure.py BINARY memory [--transport tokio] [--conns 500]
    scripts/hostile/measure.py BINARY slots  [--transport blocking] [--conns 200]

`memory`: N token-less connections each send a head declaring 2 MiB and then 2 MiB
minus one byte of body (the body never completes). Prints the server's RSS before, at its
peak, and 3 s after the connections are closed, and how many got which answer.

`slots`: N token-less connections each send a head declaring 1,000 bytes and then one
body byte every 2 s; meanwhile 20 authenticated requests are sent one after the other on
fresh connections (0.5 s apart, each given `--answer-timeout` s, default 5). Prints how
many of those got 200 (and how many within 2 s), 503 or nothing; how many trickling
connections the server still holds at the end without having answered or closed them
(seen from the client, and as sockets open in the server); and the server's RSS peak
(VmHWM). The trickle runs on one epoll loop: connects are issued without blocking, at
most `--inflight` (256) at once, so it scales to 10,000 connections (this script raises
its own RLIMIT_NOFILE to N + 256 within the hard limit; the server inherits it, or gets
`--server-nofile`). The authenticated requests start once every trickling connection is
open (or failed), or with `--probe-during` as soon as the first is being opened;
`--probe-from 127.0.0.2` sends them from another loopback address than the trickle's
(the per-address cap then no longer applies to them). `--sustain R` keeps opening R more
trickling connections per second once the N are open, until the 20 requests are done.
"Still held" counts trickling connections the server neither answered nor closed (the
client's view); "connections open in the server" counts the server's sockets on its port
(/proc/net/tcp, listener and TIME_WAIT excluded). `--json` adds every figure (each
authenticated request's time and answer, the first refusal's bytes, the trickle's answers,
peak descriptors and threads of the server) as one JSON line; `--server-log FILE` keeps
the server's log.

`--config FILE` passes a settings file to `serve` (e.g. `[limits]
max_unauthenticated_per_ip = 0`, so that every connection reaches the 401 path, as 500
different addresses would). Everything is on loopback and bounded in time (60 s for
`memory`; for `slots` 60 s to open the connections, 180 s in all, `--open-timeout` and
`--time-limit`); the server runs on a fresh data directory and is killed at the end.
"""

import argparse
import collections
import errno
import json
import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
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


def start(binary, transport, data, nofile=None):
    port = free_port()
    extra = ["--config", CONFIG] if CONFIG else []

    def limit():
        if nofile:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

    proc = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
         "--transport", transport] + extra,
        stdout=subprocess.DEVNULL, stderr=LOG or subprocess.DEVNULL, preexec_fn=limit)
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


def raise_nofile(need):
    """Raises this process's soft RLIMIT_NOFILE to `need` (within the hard limit); the
    server, started after, inherits it unless --server-nofile says otherwise."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        want = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    if soft != resource.RLIM_INFINITY and soft < need:
        sys.exit(f"RLIMIT_NOFILE: {need} descriptors needed, the hard limit is {hard}")


def server_fds(pid):
    """Open descriptors of the server."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def server_conns(port):
    """TCP connections on `port` held open by a process (inode set; not the listener, not
    TIME_WAIT or orphans): the trickling and other connections the server still holds."""
    n = 0
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                local, state, inode = parts[1], parts[3], parts[9]
                if int(local.split(":")[1], 16) == port and state != "0A" and inode != "0":
                    n += 1
    except OSError:
        pass
    return n


def proc_status(pid, field):
    """A numeric field of /proc/PID/status (kB for memory fields), 0 when gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Trickler:
    """N token-less uploads, driven by one epoll loop: connects are issued without blocking,
    at most `inflight` at once (the listen backlog is 1,024; a SYN flood past it only
    measures the kernel); once connected, each sends the head declaring 1,000 bytes, then
    one body byte every `interval` s for as long as the socket takes it. What the server
    sends back is read (its first 64 bytes kept) so that its answers can be counted."""

    def __init__(self, port, conns, inflight, interval=2.0):
        self.addr = ("127.0.0.1", port)
        self.todo = conns
        self.inflight = inflight
        self.interval = interval
        self.sel = selectors.DefaultSelector()
        self.connecting = 0
        self.opened = []          # records of connected sockets, in order
        self.failed = {}          # connect errors by name
        self.send_errors = 0
        self.timer = collections.deque()  # (due, record): equal intervals keep it sorted
        self.head = head("", 1000)

    def start_connects(self, now):
        while self.todo and self.connecting < self.inflight:
            self.todo -= 1
            try:
                s = socket.socket()
            except OSError as e:
                self.fail(errno.errorcode.get(e.errno, str(e)))
                continue
            s.setblocking(False)
            err = s.connect_ex(self.addr)
            if err not in (0, errno.EINPROGRESS):
                s.close()
                self.fail(errno.errorcode.get(err, str(err)))
                continue
            rec = {"sock": s, "state": "connecting", "got": b"", "eof": False,
                   "error": None, "sent": 0, "t0": now}
            self.sel.register(s, selectors.EVENT_WRITE, rec)
            self.connecting += 1

    def drop(self, rec):
        """Closes a socket the server has reset (frees the descriptor for --sustain)."""
        s = rec["sock"]
        if s.fileno() >= 0:
            if s in self.sel.get_map():
                self.sel.unregister(s)
            s.close()

    def fail(self, why):
        self.failed[why] = self.failed.get(why, 0) + 1

    def opening(self):
        return self.todo > 0 or self.connecting > 0

    def turn(self, now, pace):
        if self.todo:
            self.start_connects(now)
        while self.timer and self.timer[0][0] <= now:
            _, rec = self.timer.popleft()
            if rec["error"]:
                continue
            try:
                rec["sock"].send(b" ")
                rec["sent"] += 1
            except BlockingIOError:
                pass
            except OSError as e:
                rec["error"] = errno.errorcode.get(e.errno, str(e))
                self.send_errors += 1
                self.drop(rec)
                continue
            self.timer.append((now + self.interval, rec))
        wait = pace
        if self.timer:
            wait = min(wait, max(0.0, self.timer[0][0] - now))
        for key, ev in self.sel.select(timeout=wait):
            rec = key.data
            s = rec["sock"]
            if rec["state"] == "connecting":
                self.connecting -= 1
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self.sel.unregister(s)
                    s.close()
                    self.fail(errno.errorcode.get(err, str(err)))
                    continue
                try:
                    n = s.send(self.head)  # ~200 bytes into an empty send buffer
                except OSError as e:
                    n = -1
                    rec["error"] = errno.errorcode.get(e.errno, str(e))
                rec["state"] = "open"
                rec["connected"] = time.time() - rec["t0"]
                self.opened.append(rec)
                if n != len(self.head):
                    rec["error"] = rec["error"] or "short head"
                    self.sel.unregister(s)
                    continue
                self.sel.modify(s, selectors.EVENT_READ, rec)
                self.timer.append((time.time() + self.interval, rec))
                continue
            try:
                chunk = s.recv(4096)
            except BlockingIOError:
                continue
            except OSError as e:
                rec["error"] = errno.errorcode.get(e.errno, str(e))
                self.drop(rec)
                continue
            if not chunk:
                rec["eof"] = True
                self.sel.unregister(s)  # the trickle goes on until the socket refuses it
            elif len(rec["got"]) < 64:
                rec["got"] += chunk[:64 - len(rec["got"])]

    def final(self):
        """Per opened connection, now: answered (what), closed silently, or held (neither
        answered nor closed: the server still holds it without a word)."""
        held = 0
        for rec in self.opened:
            if rec["eof"] or rec["error"]:
                continue
            try:
                peek = rec["sock"].recv(64, socket.MSG_PEEK)
                if not peek:
                    rec["eof"] = True
                elif len(rec["got"]) < 64:
                    rec["got"] += peek[:64 - len(rec["got"])]
            except BlockingIOError:
                if not rec["got"]:
                    held += 1
            except OSError as e:
                rec["error"] = errno.errorcode.get(e.errno, str(e))
        answers = {}
        for rec in self.opened:
            code = rec["got"][9:12].decode(errors="replace") if rec["got"] else None
            if code is None:
                code = "reset" if rec["error"] else ("closed" if rec["eof"] else "none")
            answers[code] = answers.get(code, 0) + 1
        return held, answers

    def close(self):
        for rec in self.opened:
            try:
                rec["sock"].close()
            except OSError:
                pass
        for key in list(self.sel.get_map().values()):
            try:
                key.fileobj.close()
            except OSError:
                pass
        self.sel.close()


def slots(binary, transport, conns, data, args):
    raise_nofile(conns + 256)
    proc, port = start(binary, transport, data, args.server_nofile)
    tok = token(binary, data)
    body = (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":'
            b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            b'"io.modelcontextprotocol/clientCapabilities":{}}}}')
    request = head(f"Authorization: Bearer {tok}\r\n", len(body)) + body
    base_fds = server_fds(proc.pid)
    t0 = time.time()
    hard_deadline = t0 + args.time_limit
    stop = threading.Event()
    opened = threading.Event()
    peak = {"fds": base_fds, "threads": 0, "rss": 0}

    def sample():
        while not stop.is_set() and proc.poll() is None:
            peak["fds"] = max(peak["fds"], server_fds(proc.pid))
            peak["threads"] = max(peak["threads"], proc_status(proc.pid, "Threads"))
            peak["rss"] = max(peak["rss"], proc_status(proc.pid, "VmRSS"))
            stop.wait(0.25)

    probes = []  # (answer, seconds, seconds since the trickle began)
    refusals = {}  # the first answer of each status other than 200, as received

    def probe():
        if not args.probe_during:
            opened.wait(max(0.0, hard_deadline - time.time()))
        for i in range(20):
            if time.time() > hard_deadline:
                probes.append(("deadline", None, None))
                continue
            t = time.time()
            try:
                source = (args.probe_from, 0) if args.probe_from else None
                with socket.create_connection(("127.0.0.1", port), timeout=args.answer_timeout,
                                              source_address=source) as c:
                    c.settimeout(max(0.1, args.answer_timeout - (time.time() - t)))
                    c.sendall(request)
                    got = c.recv(512)
                    code = got[9:12].decode(errors="replace") if got else "closed"
                    if code != "200" and got and code not in refusals:
                        refusals[code] = got.decode(errors="replace")
            except socket.timeout:
                code = "timeout"
            except OSError as e:
                code = errno.errorcode.get(e.errno, type(e).__name__)
            probes.append((code, time.time() - t, t - t0))
            time.sleep(0.5)
        stop.set()

    sampler = threading.Thread(target=sample, daemon=True)
    prober = threading.Thread(target=probe, daemon=True)
    sampler.start()
    prober.start()
    tr = Trickler(port, conns, args.inflight)
    open_deadline = t0 + args.open_timeout
    open_seconds = None
    at_probe = None
    sustained = 0
    while not stop.is_set() and time.time() < hard_deadline and proc.poll() is None:
        now = time.time()
        if args.sustain and open_seconds is not None:
            due = int((now - t0 - open_seconds) * args.sustain) - sustained
            if due > 0:
                tr.todo += due
                sustained += due
        elif tr.todo and now >= open_deadline:
            tr.failed["not attempted (open timeout)"] = tr.todo
            tr.todo = 0
        tr.turn(now, 0.005 if tr.todo or args.sustain else 0.1)
        if open_seconds is None and not tr.opening():
            open_seconds = time.time() - t0
            opened.set()
        if at_probe is None and opened.is_set():
            at_probe = (len(tr.opened), server_conns(port))
    stop.set()
    prober.join(timeout=args.answer_timeout + 2)
    exited = proc.poll()
    conns_end = server_conns(port)
    held, answers = tr.final()
    hwm = proc_status(proc.pid, "VmHWM")
    rss_end = proc_status(proc.pid, "VmRSS")
    tr.close()
    proc.kill()
    proc.wait()
    codes = [p[0] for p in probes] + ["unsent"] * (20 - len(probes))
    ok = codes.count("200")
    refused = codes.count("503")
    silent = 20 - ok - refused
    lat = sorted(p[1] for p in probes if p[0] == "200")
    result = {
        "transport": transport, "conns": conns, "config": CONFIG,
        "probe": "during" if args.probe_during else "after-open",
        "ok": ok, "503": refused, "nothing": silent,
        "probe_answers": {c: codes.count(c) for c in sorted(set(codes))},
        "ok_within_2s": sum(1 for x in lat if x <= 2.0),
        "ok_latency_median_s": round(lat[len(lat) // 2], 3) if lat else None,
        "ok_latency_max_s": round(lat[-1], 3) if lat else None,
        "first_probe_at_s": (round(probes[0][2], 1)
                             if probes and probes[0][2] is not None else None),
        "probe_timeline": [(round(p[2], 1), p[0], round(p[1], 3)) for p in probes
                           if p[1] is not None],
        "probe_refusals": refusals,
        "probe_from": args.probe_from, "sustain_per_s": args.sustain, "sustained": sustained,
        "opened": len(tr.opened), "connect_failed": tr.failed,
        "open_seconds": round(open_seconds, 1) if open_seconds else None,
        "trickle_answers": answers, "trickle_send_errors": tr.send_errors,
        "held_client_side": held,
        "server_conns_when_open": at_probe[1] if at_probe else None,
        "server_conns_end": conns_end,
        "server_fds_peak": peak["fds"], "server_threads_peak": peak["threads"],
        "rss_mb_peak": round(max(hwm, peak["rss"]) / 1024), "rss_mb_end": round(rss_end / 1024),
        "server_exited": exited, "seconds": round(time.time() - t0, 1),
    }
    print(f"{transport}: {conns} trickling token-less uploads ({len(tr.opened)} opened in "
          f"{result['open_seconds']} s): of 20 authenticated requests {ok} got 200 "
          f"({result['ok_within_2s']} within 2 s), {refused} 503, {silent} nothing; "
          f"{held} trickling connections still held ({conns_end} connections open "
          f"in the server); RSS peak {result['rss_mb_peak']} MB")
    if args.json:
        print(json.dumps(result))
    if exited is not None:
        print(f"the server exited during the run with status {exited}")


done = []
CONFIG = None
LOG = None

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("what", choices=["memory", "slots"])
    p.add_argument("--transport", default=None)
    p.add_argument("--conns", type=int, default=None)
    p.add_argument("--authenticated", action="store_true",
                   help="memory: send a valid token (the bodies are then read, within the budget)")
    p.add_argument("--config", default=None, help="a TOML file passed to serve --config")
    p.add_argument("--answer-timeout", type=float, default=5.0,
                   help="slots: seconds an authenticated request may take (connect + answer)")
    p.add_argument("--open-timeout", type=float, default=60.0,
                   help="slots: seconds to open the trickling connections")
    p.add_argument("--time-limit", type=float, default=180.0,
                   help="slots: hard bound on the whole run, in seconds")
    p.add_argument("--inflight", type=int, default=256,
                   help="slots: connects in progress at once while opening")
    p.add_argument("--probe-during", action="store_true",
                   help="slots: send the authenticated requests while the trickling "
                        "connections are being opened, not after")
    p.add_argument("--probe-from", default=None,
                   help="slots: source address of the authenticated requests (e.g. "
                        "127.0.0.2: another loopback address than the trickle's)")
    p.add_argument("--sustain", type=float, default=0.0,
                   help="slots: once the N are open, keep opening this many more trickling "
                        "connections per second until the authenticated requests are done")
    p.add_argument("--server-nofile", type=int, default=None,
                   help="slots: the server's RLIMIT_NOFILE (default: this script's, "
                        "raised to what the run needs)")
    p.add_argument("--server-log", default=None,
                   help="append the server's stderr (its log) to this file")
    p.add_argument("--json", action="store_true", help="slots: also print the figures as JSON")
    a = p.parse_args()
    CONFIG = a.config
    LOG = open(a.server_log, "ab") if a.server_log else None
    data = tempfile.mkdtemp(prefix="dunning-hostile-")
    try:
        if a.what == "memory":
            memory(a.binary, a.transport or "tokio", a.conns or 500, data, a.authenticated)
        else:
            slots(a.binary, a.transport or "blocking", a.conns or 200, data, a)
    finally:
        shutil.rmtree(data, ignore_errors=True)
