#!/usr/bin/env bash
# The MCP Inspector CLI's own OAuth flow (@modelcontextprotocol/inspector 2.12.0) against
# kobana-dunning's embedded development authorization server, from the URL
# alone: the Inspector discovers the metadata, registers itself, listens on a loopback
# callback and prints the authorize URL; this script plays the person (opens the page,
# picks the demo member, approves: curl with the page's cookie) and follows the redirect
# to the Inspector's callback. The Inspector then lists the tools. A second run uses the
# stored sign-in (`--stored-auth-only`) to call `dunning_me`, which must answer as that
# member.
#
#   HOME=<scratch> inspector_oauth.sh INSPECTOR_BIN URL [LOGIN]
#
# Closes with `inspector-oauth: N passed, M failed`.
set -uo pipefail
INSPECTOR=$1
URL=$2
LOGIN=${3:-caio@demo.example}
WORK=$(mktemp -d)
[[ -n ${KEEP_WORK:-} ]] || trap 'rm -rf "$WORK"' EXIT; echo "work: $WORK" >&2
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
# A free loopback port for the Inspector's callback listener.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
CALLBACK=http://127.0.0.1:$PORT/oauth/callback
# The sign-in is kept in a file store under HOME, so the second run finds it. No browser
# is opened (BROWSER=true); the URL is read from stderr.
export MCP_INSPECTOR_SECRET_STORE=file MCP_AUTO_OPEN_ENABLED=true BROWSER=true
timeout 120 "$INSPECTOR" --cli "$URL" --transport http --protocol-era modern \
    --callback-url "$CALLBACK" --format json --method tools/list \
    >"$WORK/list.json" 2>"$WORK/list.err" &
PID=$!
AUTH=
for _ in $(seq 1 600); do
    AUTH=$(grep -oE 'https?://[^ ]*/authorize\?[^ ]*' "$WORK/list.err" | head -1)
    [[ -n $AUTH ]] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
if [[ -n $AUTH ]]; then
    check "the Inspector asks for a sign-in" 1 "${AUTH%%\?*}"
else
    check "the Inspector asks for a sign-in" 0 "$(tail -c 200 "$WORK/list.err" | tr '\n' ' ')"
fi
if [[ -n $AUTH ]]; then
    curl -s -c "$WORK/cookies" "$AUTH" >"$WORK/page.html"
    REQUEST=$(grep -o 'name="request" value="[^"]*"' "$WORK/page.html" | sed 's/.*value="//;s/"$//')
    PERSON=$(grep -o "value=\"[^\"]*|$LOGIN\"" "$WORK/page.html" | sed 's/value="//;s/"$//')
    check "$LOGIN is on the page" "$([[ -n $REQUEST && -n $PERSON ]] && echo 1 || echo 0)"
    LOCATION=$(curl -s -b "$WORK/cookies" -o /dev/null -w '%{redirect_url}' \
        --data-urlencode "request=$REQUEST" --data-urlencode "person=$PERSON" \
        -d decision=approve "${AUTH%%\?*}")
    check "approving redirects to the Inspector's callback" \
        "$([[ $LOCATION == "$CALLBACK?"* ]] && echo 1 || echo 0)" "${LOCATION%%code=*}"
    curl -s "$LOCATION" >/dev/null
fi
wait "$PID"
RC=$?
N=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d.get("result", d)["tools"]))' "$WORK/list.json" 2>/dev/null)
check "tools/list after the sign-in" "$([[ $RC -eq 0 && ${N:-0} -gt 0 ]] && echo 1 || echo 0)" "${N:-no} tools"
timeout 120 "$INSPECTOR" --cli "$URL" --transport http --protocol-era modern \
    --stored-auth-only --format json --method tools/call --tool-name dunning_me \
    >"$WORK/me.json" 2>"$WORK/me.err"
WHO=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d.get("result", d); print(d["structuredContent"]["user"]["email"])' "$WORK/me.json" 2>/dev/null)
check "the stored sign-in calls dunning_me as $LOGIN" "$([[ $WHO == "$LOGIN" ]] && echo 1 || echo 0)" "${WHO:-$(tail -c 200 "$WORK/me.err")}"
echo "inspector-oauth: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
