"""The Python SDK's OAuth client (`mcp` 2.3.0, `OAuthClientProvider`) against a running
kobana-dunning on its embedded development authorization server, headless.

Given only the MCP URL, the SDK meets the 401, discovers the protected-resource and
authorization-server metadata, registers itself (RFC 7591), and sends the person to the
authorize page. The redirect handler here plays the person: it fetches the page, picks
the demo member by login, submits the form with "Approve" (with the page's cookie, as a
browser would), and hands the code from the redirect to the SDK, which redeems it with
its PKCE verifier. Then: tools are listed and a tool is called with that member's rights
(in the 2026-07-28 era and the legacy one); the access token is made to expire and the
next call refreshes it (a new access token, the call works); a stolen copy of the
rotated refresh token, replayed, is refused and takes the new one down with it.

    python python_oauth_client.py --url http://127.0.0.1:8080/ [--person caio@demo.example]

Prints one line per check and closes with `python-oauth-client: N passed, M failed`.
"""

import argparse
import asyncio
import sys
import time
import traceback
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

RESULTS = {"passed": 0, "failed": 0}
REDIRECT = "http://127.0.0.1:45999/callback"


def check(label, ok, detail=""):
    RESULTS["passed" if ok else "failed"] += 1
    print(f"{'ok    ' if ok else 'FAILED'} {label}{(' - ' + detail) if detail else ''}", flush=True)
    return ok


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class ConsentForm(HTMLParser):
    """The form of the consent page: its action, hidden fields and person choices."""

    def __init__(self):
        super().__init__()
        self.action = None
        self.hidden = {}
        self.people = []  # (value, disabled)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.action = a.get("action")
        elif tag == "input" and a.get("type") == "hidden":
            self.hidden[a.get("name")] = a.get("value", "")
        elif tag == "input" and a.get("type") == "radio" and a.get("name") == "person":
            self.people.append((a.get("value", ""), "disabled" in a))


class Person:
    """Plays the person at the browser: opens the page, approves as `login`."""

    def __init__(self, login):
        self.login = login
        self.result = None

    async def redirect(self, authorization_url):
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
            page = await browser.get(authorization_url)
            check("the authorize page answers 200", page.status_code == 200, str(page.status_code))
            check(
                "the page cannot be framed",
                page.headers.get("x-frame-options") == "DENY"
                and "frame-ancestors 'none'" in page.headers.get("content-security-policy", ""),
            )
            form = ConsentForm()
            form.feed(page.text)
            choice = next((v for v, off in form.people if v.endswith("|" + self.login) and not off), None)
            check(f"{self.login} may sign in", choice is not None, f"{len(form.people)} people on the page")
            action = urljoin(authorization_url, form.action or "/authorize")
            data = dict(form.hidden, person=choice or "", decision="approve")
            answer = await browser.post(action, data=data)
            location = answer.headers.get("location", "")
            check("approving redirects to the client", answer.status_code == 302 and location.startswith(REDIRECT),
                  f"{answer.status_code} {location[:80]}")
            q = parse_qs(urlsplit(location).query)
            self.result = AuthorizationCodeResult(
                code=(q.get("code") or [""])[0],
                state=(q.get("state") or [None])[0],
                iss=(q.get("iss") or [None])[0],
            )

    async def callback(self):
        return self.result


def structured(result):
    if getattr(result, "structured_content", None) is not None:
        return result.structured_content
    return None


async def session(url, provider, mode, login, label):
    http = create_mcp_http_client(auth=provider)
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            check(f"{label}: tools/list", len(tools) > 0, f"{len(tools)} tools")
            me = await client.call_tool("dunning_me", {})
            who = (structured(me) or {}).get("user", {}).get("email")
            check(f"{label}: dunning_me as {login}", who == login and not me.is_error, str(who))
            return tools


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--person", default="caio@demo.example")
    args = ap.parse_args()
    storage = Memory()
    person = Person(args.person)
    provider = OAuthClientProvider(
        server_url=args.url,
        client_metadata=OAuthClientMetadata(
            client_name="python-oauth-client",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )
    try:
        tools = await session(args.url, provider, "auto", args.person, "auto")
        check("a client registered itself", storage.client is not None and storage.client.client_id.startswith("kd-"))
        check("the operator gets no admin tool", not any(t.startswith("dunning_webhooks_") for t in tools))
        await session(args.url, provider, "legacy", args.person, "legacy")

        # The access token expires: the next call refreshes it.
        first_access = storage.tokens.access_token
        first_refresh = storage.tokens.refresh_token
        provider.context.token_expiry_time = time.time() - 1
        await session(args.url, provider, "auto", args.person, "after expiry")
        check("the expired access token was refreshed", storage.tokens.access_token != first_access)
        check("the refresh token rotated", storage.tokens.refresh_token != first_refresh)

        # A copy of the first refresh token replayed: refused, and the family revoked.
        async with httpx2.AsyncClient(timeout=30) as h:
            meta = (await h.get(urljoin(args.url, "/.well-known/oauth-authorization-server"))).json()
            form = {"grant_type": "refresh_token", "client_id": storage.client.client_id}
            stolen = await h.post(meta["token_endpoint"], data=dict(form, refresh_token=first_refresh))
            check("a reused refresh token is refused", stolen.status_code == 400
                  and stolen.json().get("error") == "invalid_grant", stolen.text[:120])
            current = await h.post(meta["token_endpoint"], data=dict(form, refresh_token=storage.tokens.refresh_token))
            check("its family is revoked", current.status_code == 400, current.text[:120])
    except Exception as e:  # noqa: BLE001 - every failure is a failed check
        traceback.print_exc()
        check("the OAuth flow", False, f"{type(e).__name__}: {e}")
    print(f"python-oauth-client: {RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
