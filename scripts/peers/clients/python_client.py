"""The Python SDK client (`mcp` 2.3.0) against a running kobana-dunning, with a real token.

In each mode — `auto` (probes `server/discover`), `legacy` (the 2025 `initialize`
handshake) and `2026-07-28` (pinned) — it lists the tools, calls a read tool, reads a
resource and gets a prompt. Against the demo data it then calls read tools of Domain I
and II (charges, debtors, agreements, webhooks: structuredContent), reads the three PDF
resources (a paid charge's settlement letter, a debtor's statement, an agreement's term:
one base64 `blob`, `application/pdf`, `%PDF-` ... `%%EOF`, as many bytes as the tool's
descriptor says), checks that an unpaid charge's letter is refused with NOT_SETTLED,
gets two prompts with arguments (`settle_and_document`, `debtor_360`) and completes a
prompt argument and a template variable (`completion/complete`). Wherever the 2026-07-28 era was negotiated it also completes
the confirmation of a destructive tool (the SDK answers the server's `input_required`
elicitation through `elicitation_callback`, which accepts), and checks that the same call
without the `elicitation` capability is refused with -32021; in the legacy era it checks
that the destructive call is refused without executing (CONFIRMATION_REQUIRED).

    python python_client.py --url http://127.0.0.1:8080/ --token "$TOKEN"

Prints one line per check and closes with `python-client: N passed, M failed`.
"""

import argparse
import asyncio
import base64
import binascii
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


def structured_only(result):
    """The tool result's `structuredContent` proper (no fallback to the text block)."""
    return getattr(result, "structured_content", None)


def record(items_list, key="id"):
    """The first record of a list with `key` set, or None."""
    return next((i for i in items_list if isinstance(i, dict) and i.get(key)), None)


async def read_tool(client, label, name, args, want=None):
    """Calls a read tool and checks its structuredContent; `want(data)` -> (ok, detail)."""
    try:
        result = await client.call_tool(name, args)
    except MCPError as e:
        check(f"{label} tools/call {name}", False, f"error {e.error.code} {e.error.message}")
        return None
    data = structured_only(result)
    ok = not result.is_error and isinstance(data, dict)
    detail = "" if ok else f"isError {result.is_error}, structuredContent {json.dumps(data)[:200]}"
    if ok and want is not None:
        ok, detail = want(data)
    check(f"{label} tools/call {name} (structuredContent)", ok, detail)
    return data if isinstance(data, dict) else None


async def read_pdf(client, label, uri, descriptor):
    """Reads a PDF resource: one blob, application/pdf, %PDF- ... %%EOF, the descriptor's size."""
    short = uri.replace("kobana://dunning/", "")
    try:
        read = await client.read_resource(uri)
    except MCPError as e:
        check(f"{label} resources/read {short} (PDF)", False, f"error {e.error.code} {e.error.message}")
        return
    contents = read.contents or []
    blob = getattr(contents[0], "blob", None) if len(contents) == 1 else None
    mime = getattr(contents[0], "mime_type", None) if contents else None
    try:
        data = base64.b64decode(blob, validate=True) if blob is not None else b""
    except (binascii.Error, ValueError):
        data = b""
    size = (descriptor or {}).get("byte_size")
    ok = (
        blob is not None
        and mime == "application/pdf"
        and data.startswith(b"%PDF-")
        and data.rstrip().endswith(b"%%EOF")
        and (size is None or size == len(data))
    )
    check(
        f"{label} resources/read {short} (PDF)",
        ok,
        f"{len(contents)} contents, {'blob' if blob is not None else 'no blob'}, {mime}, "
        f"{len(data)} bytes (descriptor {size}), {data[:8]!r}...{data.rstrip()[-6:]!r}",
    )


async def domain_checks(client, label, mode):
    """Domain I and II against the demo data: read tools, PDF resources, prompts with
    arguments and completions."""
    paid = await read_tool(
        client, label, "dunning_charges_list", {"status": "paid", "per_page": 5},
        lambda d: (
            bool(items(d)) and all(c.get("status") == "paid" for c in items(d)),
            f"{len(items(d))} paid charges",
        ),
    )
    charge = record(items(paid or {}))
    if not check(f"{label} found a paid demo charge", bool(charge and charge.get("debtor_id"))):
        return
    cid, did = charge["id"], charge["debtor_id"]
    await read_tool(
        client, label, "dunning_charges_get", {"id": cid},
        lambda d: (d.get("id") == cid and d.get("status") == "paid", f"status {d.get('status')}"),
    )
    await read_tool(
        client, label, "dunning_debtors_list", {"per_page": 5},
        lambda d: (bool(items(d)) and all(x.get("id") for x in items(d)), f"{len(items(d))} debtors"),
    )
    await read_tool(
        client, label, "dunning_debtors_get", {"id": did},
        lambda d: (d.get("id") == did and bool(d.get("name")), f"name {d.get('name')!r}"),
    )
    agreements = await read_tool(
        client, label, "dunning_agreements_list", {},
        lambda d: (bool(items(d)), f"{len(items(d))} agreements"),
    )
    agreement = record(items(agreements or {}))
    if agreement:
        await read_tool(
            client, label, "dunning_agreements_get", {"id": agreement["id"]},
            lambda d: (d.get("id") == agreement["id"] and bool(d.get("installments")), f"status {d.get('status')}"),
        )
    await read_tool(
        client, label, "dunning_webhooks_list", {},
        lambda d: (
            bool(items(d)) and all("secret" not in w for w in items(d)),
            f"{len(items(d))} webhooks",
        ),
    )

    # PDF resources, each with the descriptor its tool returns.
    templates = {str(t.uri_template) for t in (await client.list_resource_templates()).resource_templates}
    pdfs = [
        "kobana://dunning/charges/{id}/settlement-letter",
        "kobana://dunning/debtors/{id}/statement",
        "kobana://dunning/agreements/{id}/term",
    ]
    check(
        f"{label} resources/templates/list has the PDF templates",
        all(t in templates for t in pdfs),
        f"{len(templates)} templates",
    )
    letter = await read_tool(
        client, label, "dunning_charges_settlement_letter", {"id": cid},
        lambda d: (d.get("content_type") == "application/pdf" and d.get("byte_size", 0) > 0, f"{d.get('byte_size')} bytes"),
    )
    await read_pdf(client, label, f"kobana://dunning/charges/{cid}/settlement-letter", letter)
    statement = await read_tool(
        client, label, "dunning_debtors_statement", {"id": did, "format": "pdf"},
        lambda d: (d.get("content_type") == "application/pdf" and d.get("byte_size", 0) > 0, f"{d.get('byte_size')} bytes"),
    )
    await read_pdf(client, label, f"kobana://dunning/debtors/{did}/statement", statement)
    if check(f"{label} found a demo agreement", agreement is not None):
        term = await read_tool(
            client, label, "dunning_agreements_term", {"id": agreement["id"]},
            lambda d: (d.get("content_type") == "application/pdf" and d.get("byte_size", 0) > 0, f"{d.get('byte_size')} bytes"),
        )
        await read_pdf(client, label, f"kobana://dunning/agreements/{agreement['id']}/term", term)

    # The letter of an unpaid charge exists as a URI but is not available: NOT_SETTLED
    # (-32602 in the 2026-07-28 era, -32002 in the 2025 one).
    unpaid = None
    for status in ("pending", "overdue"):
        result = await client.call_tool("dunning_charges_list", {"status": status, "per_page": 1})
        unpaid = record(items(structured_only(result) or {}))
        if unpaid:
            break
    if unpaid:
        try:
            await client.read_resource(f"kobana://dunning/charges/{unpaid['id']}/settlement-letter")
            check(f"{label} resources/read letter of an unpaid charge refused (NOT_SETTLED)", False, "read succeeded")
        except MCPError as e:
            reason = (e.error.data or {}).get("reason") if isinstance(e.error.data, dict) else None
            check(
                f"{label} resources/read letter of an unpaid charge refused (NOT_SETTLED)",
                e.error.code == (-32602 if client.protocol_version == MODERN else -32002)
                and reason == "NOT_SETTLED",
                f"code {e.error.code}, data {json.dumps(e.error.data)}",
            )

    # Prompts with arguments: the messages name the entity.
    for name, args, wanted in (
        ("settle_and_document", {"charge_id": cid}, cid),
        ("debtor_360", {"debtor_id": did}, did),
    ):
        got = await client.get_prompt(name, args)
        texts = [getattr(m.content, "text", "") or "" for m in got.messages]
        check(
            f"{label} prompts/get {name} with {', '.join(args)}",
            len(got.messages) > 0 and any(wanted in t for t in texts),
            f"{len(got.messages)} messages, {sum(map(len, texts))} chars",
        )

    # completion/complete: a prompt argument and a template variable, by id prefix. A
    # pinned 2026-07-28 client adopts a synthesized discover result (no server/discover),
    # so only a negotiated session can see the `completions` capability.
    if mode == MODERN or check(
        f"{label} server advertises completions",
        getattr(client.server_capabilities, "completions", None) is not None,
    ):
        for ref, arg, wanted in (
            (types.PromptReference(type="ref/prompt", name="settle_and_document"), "charge_id", cid),
            (types.ResourceTemplateReference(type="ref/resource", uri="kobana://dunning/debtors/{id}/statement"), "id", did),
        ):
            what = getattr(ref, "name", None) or getattr(ref, "uri", None)
            done = await client.complete(ref, {"name": arg, "value": wanted[:4]})
            values = done.completion.values
            check(
                f"{label} completion/complete {what} {arg}",
                wanted in values and 0 < len(values) <= 100,
                f"{len(values)} values, total {done.completion.total}, hasMore {done.completion.has_more}",
            )


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

        try:
            await domain_checks(client, label, mode)
        except Exception as e:  # noqa: BLE001 - reported, then the session goes on
            traceback.print_exc()
            check(f"{label} domain checks", False, f"{type(e).__name__}: {e}")

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
