#!/usr/bin/env bash
# The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0) against a running
# kobana-dunning, with a real token: tools/list and a tools/call in the modern
# (2026-07-28) and legacy (2025) eras, then a load run of 500 calls, 10 at a time, that
# must end with 0 errors.
#
#   HOME=<scratch> inspector.sh INSPECTOR_BIN URL TOKEN [SERVER_LOG]
#
# HOME should be a scratch folder: the Inspector keeps its catalog and auth state there.
# With SERVER_LOG (the product's request log), each check also confirms that the server
# saw the call in the era asked for. Closes with `inspector: N passed, M failed`.
set -uo pipefail
INSPECTOR=$1
URL=$2
TOKEN=$3
LOG=${4:-}
PASSED=0
FAILED=0
check() { # check LABEL OK DETAIL
    if [[ $2 == 1 ]]; then
        PASSED=$((PASSED + 1))
        echo "ok     $1${3:+ - $3}"
    else
        FAILED=$((FAILED + 1))
        echo "FAILED $1${3:+ - $3}"
    fi
}
inspect() { # inspect ERA ARGS...: one CLI call, JSON result on stdout
    local era=$1
    shift
    timeout 300 "$INSPECTOR" --cli "$URL" --transport http --protocol-era "$era" \
        --header "Authorization: Bearer $TOKEN" --stored-auth-only --format json "$@"
}
# era_seen METHOD TOOL: the era of the server's last log line for that call ("" if none).
era_seen() {
    [[ -n $LOG && -f $LOG ]] || { echo "?"; return; }
    grep -F "method=\"$1\"" "$LOG" | grep -F "${2:+tool=\"$2\"}" | tail -1 |
        sed -nE 's/.* era="([0-9]+)".*/\1/p'
}

for era in modern legacy; do
    want=$([[ $era == modern ]] && echo 2026 || echo 2025)
    out=$(inspect "$era" --method tools/list 2>"$HOME/err-$era-list")
    n=$(python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["result"]["tools"]; print(len(t) if any(x["name"]=="dunning_me" for x in t) else 0)' <<<"$out" 2>/dev/null)
    seen=$(era_seen tools/list)
    check "[$era] tools/list" "$([[ ${n:-0} -gt 0 && ($seen == "$want" || $seen == "?") ]] && echo 1)" \
        "${n:-0} tools, server saw era ${seen:-none}"
    [[ ${n:-0} -gt 0 ]] || tail -5 "$HOME/err-$era-list"

    out=$(inspect "$era" --method tools/call --tool-name dunning_me 2>"$HOME/err-$era-call")
    ok=$(python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(1 if not r.get("isError") and r.get("content") else 0)' <<<"$out" 2>/dev/null)
    seen=$(era_seen tools/call dunning_me)
    check "[$era] tools/call dunning_me" "$([[ ${ok:-0} == 1 && ($seen == "$want" || $seen == "?") ]] && echo 1)" \
        "server saw era ${seen:-none}"
    [[ ${ok:-0} == 1 ]] || tail -5 "$HOME/err-$era-call"
done

out=$(inspect modern --method tools/call --tool-name dunning_me --load --load-requests 500 \
    --load-concurrency 10 2>"$HOME/err-load")
summary=$(python3 -c '
import json, sys
r = json.load(sys.stdin)["result"]
print(r["requests"], r["ok"], r["errors"], r["toolErrors"], r["latencyMs"]["p50"], r["latencyMs"]["p99"], r["throughput"])
' <<<"$out" 2>/dev/null)
read -r requests okc errors tool_errors p50 p99 rps <<<"${summary:-0 0 1 1 0 0 0}"
check "[modern] load: 500 tools/call, 10 concurrent, 0 errors" \
    "$([[ $requests == 500 && $okc == 500 && $errors == 0 && $tool_errors == 0 ]] && echo 1)" \
    "ok $okc/$requests, errors $errors, tool errors $tool_errors, p50 ${p50} ms, p99 ${p99} ms, ${rps} calls/s"
[[ $errors == 0 ]] || { echo "$out" | head -c 2000; echo; tail -5 "$HOME/err-load"; }

echo "inspector: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
