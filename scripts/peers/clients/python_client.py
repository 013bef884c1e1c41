"""The Python SDK client (`mcp` 2.3.0) against a running kobana-dunning, with a real token.

In each mode — `auto` (probes `server/discover`), `legacy` (the 2025 `initialize`
handshake) and `2026-07-28` (pinned) — it lists the tools, calls a read tool, reads a
resource and gets a prompt. Wherever the 2026-07-28 era was negotiated it also completes
the confirmation of a destructive tool (the SDK answers the server's `input_required`
elicitation through `elicitation_callback`, which accepts), and checks that the same call
without the `elicitation` capability is refused with -32021; in the legacy era it checks
that the destructive call is refused without executing (CONFIRMATION_REQUIRED).

    python python_client.py --url http://127.0.0.1:8080/ --token "$TOKEN"

Prints one line per check and closes with `python-client: N passed, M failed`.
"""

import argparse
import asyncio
import json
import sys
import traceback

from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MODES = ["auto", "legacy", "2026-07-28"]
MODERN = "2026-07-28"

RESULTS = {"passed": 0, "failed": 0}
ASKED = []


def check(label, ok, detail=""):
    RESULTS["passed" if ok else "failed"] += 1
    print(f"{'ok    ' if ok else 'FAILED'} {label}{(' - ' + detail) if detail else ''}", flush=True)
    return ok


async def accept_confirmation(context, params):
    """The user says yes to whatever the server asks (boolean fields set to true)."""
    ASKED.append(params.message)
    schema = getattr(params, "requested_schema", None) or {}
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    props = (schema or {}).get("properties", {}) or {}
    content = {k: True for k, v in props.items() if (v or {}).get("type") == "boolean"}
    return types.ElicitResult(action="accept", content=content)


def structured(result):
    """The structured content of a tool result, or its first text block parsed as JSON."""
    if getattr(result, "structured_content", None) is not None:
        return result.structured_content
    for block in result.content or []:
        text = getattr(block, "text", None)
        if text:
            try:
                return json.loads(text)
            except ValueError:
                return text
    return None


def items(value):
    """The list of records in a list-tool result (`items`, `data` or any list field)."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("items", "data", "charges", "results"):
            if isinstance(value.get(key), list):
                return value[key]
        for v in value.values():
            if isinstance(v, list) and v and isinstance(v[0], dict):
                return v
    return []


def transport(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return streamable_http_client(url, http_client=http)


async def find_cancellable_charge(client):
    """An open charge of the demo organization (pending or overdue), for the destructive call."""
    for status in ("overdue", "pending", None):
        args = {"status": status} if status else {}
        try:
            result = await client.call_tool("dunning_charges_list", args)
        except MCPError:
            continue
        if result.is_error:
            continue
        for charge in items(structured(result)):
            if charge.get("status") in ("pending", "overdue", "open") and charge.get("id"):
                return charge["id"]
    return None


async def run_mode(url, token, mode):
    label = f"[{mode}]"
    async with Client(
        transport(url, token),
        mode=mode,
        elicitation_callback=accept_confirmation,
        raise_exceptions=True,
    ) as client:
        version = client.protocol_version
        expected = MODERN if mode in ("auto", MODERN) else None
        check(
            f"{label} connected",
            version == expected if expected else version != MODERN,
            f"protocol {version}",
        )

        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        check(f"{label} tools/list", len(tools) > 0 and "dunning_me" in names, f"{len(tools)} tools")

        me = await client.call_tool("dunning_me", {})
        check(f"{label} tools/call dunning_me (read)", not me.is_error and structured(me) is not None)

        resources = (await client.list_resources()).resources
        uris = [str(r.uri) for r in resources]
        uri = "kobana://dunning/me" if "kobana://dunning/me" in uris else (uris[0] if uris else None)
        if check(f"{label} resources/list", uri is not None, f"{len(uris)} resources"):
            read = await client.read_resource(uri)
            check(f"{label} resources/read {uri}", len(read.contents) > 0)

        prompts = (await client.list_prompts()).prompts
        prompt = next(
            (p for p in prompts if not any(a.required for a in (p.arguments or []))),
            None,
        )
        if check(f"{label} prompts/list", prompt is not None, f"{len(prompts)} prompts"):
            got = await client.get_prompt(prompt.name, {})
            check(f"{label} prompts/get {prompt.name}", len(got.messages) > 0)

        charge = await find_cancellable_charge(client)
        if not check(f"{label} found an open demo charge", charge is not None):
            return
        if version == MODERN:
            ASKED.clear()
            result = await client.call_tool("dunning_charges_cancel", {"id": charge})
            data = structured(result)
            check(
                f"{label} destructive dunning_charges_cancel confirmed through elicitation",
                not result.is_error and len(ASKED) == 1,
                f"asked {ASKED!r}, result {json.dumps(data)[:200]}",
            )
            after = await client.call_tool("dunning_charges_get", {"id": charge})
            status = (structured(after) or {}).get("status")
            check(f"{label} the charge is cancelled", status in ("cancelled", "canceled"), f"status {status}")
        else:
            result = await client.call_tool("dunning_charges_cancel", {"id": charge})
            data = structured(result) or {}
            code = (data.get("error") or {}).get("code") if isinstance(data, dict) else None
            check(
                f"{label} destructive call refused without a 2026 client",
                result.is_error and code == "CONFIRMATION_REQUIRED",
                f"code {code}",
            )


async def refused_without_elicitation(url, token):
    """A 2026 client that does not declare `elicitation` gets -32021 for a destructive tool."""
    async with Client(transport(url, token), mode=MODERN, raise_exceptions=True) as client:
        charge = await find_cancellable_charge(client)
        try:
            result = await client.call_tool("dunning_charges_cancel", {"id": charge or "none"})
            check("[2026-07-28, no elicitation] destructive call refused", False, f"got {result}")
        except MCPError as e:
            check("[2026-07-28, no elicitation] destructive call refused with -32021", e.error.code == -32021, f"code {e.error.code}")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    a = ap.parse_args()
    for mode in MODES:
        try:
            await run_mode(a.url, a.token, mode)
        except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
            traceback.print_exc()
            check(f"[{mode}] session", False, f"{type(e).__name__}: {e}")
    try:
        await refused_without_elicitation(a.url, a.token)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        check("[2026-07-28, no elicitation] session", False, f"{type(e).__name__}: {e}")
    print(f"python-client: {RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
