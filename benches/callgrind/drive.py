# Sends N `dunning_debtors_create` calls (new debtors, valid CPFs, own idempotency
# keys) to a kobana-dunning server on 127.0.0.1:PORT, one after another on one
# keep-alive connection: drive.py BIN PORT N FIRST (env D: the data dir, for the token).
import http.client, json, subprocess, sys, os

bin_, port, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = os.environ["D"]
tok = subprocess.check_output([bin_, "token", "--org", "demo", "--person", "ana@demo.example", "--data-dir", d]).decode().strip()
def cpf(base):
    ds = [int(c) for c in f"{base:09d}"]
    for k in (9, 10):
        s = sum(ds[i] * (k + 1 - i) for i in range(k))
        r = (s * 10) % 11
        ds.append(0 if r == 10 else r)
    return "".join(map(str, ds))
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
     "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "dunning_debtors_create",
     "Authorization": "Bearer " + tok}
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
ok = 0
for i in range(start, start + n):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": meta, "name": "dunning_debtors_create",
            "arguments": {"cnpj_cpf": cpf(100000000 + i), "name": f"Carga {i}", "idempotency_key": f"cg-{i}"}}}
    c.request("POST", "/", json.dumps(body), h)
    r = c.getresponse(); t = r.read()
    if r.status == 200 and b'"isError":true' not in t: ok += 1
if ok != n:
    sys.exit(f"only {ok} of {n} creates succeeded")
