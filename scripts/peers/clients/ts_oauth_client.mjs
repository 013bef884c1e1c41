// The TypeScript SDK's OAuth client (@modelcontextprotocol/client 2.4.0, an
// `OAuthClientProvider` passed as `authProvider`) against a running kobana-dunning on its
// embedded development authorization server, headless, from the URL alone.
//
// The SDK meets the 401, discovers the metadata, registers itself (RFC 7591) and calls
// `redirectToAuthorization`; here that plays the person: it fetches the authorize page,
// picks the demo member by login, submits the form with "Approve" (with the page's
// cookie, as a browser would) and keeps the redirect's query. The connection attempt ends
// with `UnauthorizedError`; `finishAuth` redeems the code (PKCE verifier, RFC 9207 `iss`)
// and a new connection lists the tools and calls one with that member's rights, in the
// 2026-07-28 era. Then the tokens are made to look expired and a new connection refreshes.
//
//   node ts_oauth_client.mjs --url http://127.0.0.1:8080/ [--person caio@demo.example]
//
// Run from a folder whose node_modules holds the SDK (scripts/peers/run copies it into
// .peers/js). Prints one line per check and closes with `ts-oauth-client: N passed, M failed`.
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v.replace(/^--/, ''), all[i + 1]]] : acc), [])
);
if (!args.url) {
    console.error('usage: node ts_oauth_client.mjs --url URL [--person LOGIN]');
    process.exit(2);
}
const person = args.person ?? 'caio@demo.example';
const REDIRECT = 'http://127.0.0.1:45998/callback';
const results = { passed: 0, failed: 0 };
const check = (label, ok, detail = '') => {
    results[ok ? 'passed' : 'failed'] += 1;
    console.log(`${ok ? 'ok    ' : 'FAILED'} ${label}${detail ? ` - ${detail}` : ''}`);
    return ok;
};
const unescape = s => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

class Provider {
    constructor() {
        this.client = undefined;
        this.saved = undefined;
        this.verifier = undefined;
        this.callback = undefined;
        this.sentState = undefined;
        this.discovery = undefined;
    }
    state() {
        this.sentState = `st-${Math.random().toString(36).slice(2)}&=`;
        return this.sentState;
    }
    saveDiscoveryState(s) {
        this.discovery = s;
    }
    discoveryState() {
        return this.discovery;
    }
    get redirectUrl() {
        return REDIRECT;
    }
    get clientMetadata() {
        return {
            client_name: 'ts-oauth-client',
            redirect_uris: [REDIRECT],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none'
        };
    }
    clientInformation() {
        return this.client;
    }
    saveClientInformation(info) {
        this.client = info;
    }
    tokens() {
        return this.saved;
    }
    saveTokens(tokens) {
        this.saved = tokens;
    }
    saveCodeVerifier(v) {
        this.verifier = v;
    }
    codeVerifier() {
        return this.verifier;
    }
    async redirectToAuthorization(url) {
        const page = await fetch(url, { redirect: 'manual' });
        const html = await page.text();
        check('the authorize page answers 200', page.status === 200, String(page.status));
        check('the page cannot be framed', page.headers.get('x-frame-options') === 'DENY');
        const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
        const sealed = unescape((html.match(/name="request" value="([^"]*)"/) ?? [])[1] ?? '');
        const values = [...html.matchAll(/name="person"[^>]*value="([^"]*)"/g)].map(m => unescape(m[1]));
        const choice = values.find(v => v.endsWith(`|${person}`));
        check(`${person} may sign in`, choice !== undefined, `${values.length} people on the page`);
        const answer = await fetch(new URL('/authorize', url), {
            method: 'POST',
            redirect: 'manual',
            headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
            body: new URLSearchParams({ request: sealed, person: choice ?? '', decision: 'approve' })
        });
        const location = answer.headers.get('location') ?? '';
        check('approving redirects to the client', answer.status === 302 && location.startsWith(REDIRECT), `${answer.status}`);
        this.callback = new URL(location, REDIRECT).searchParams;
    }
}

const provider = new Provider();
const connect = async () => {
    const client = new Client({ name: 'ts-oauth-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    const transport = new StreamableHTTPClientTransport(new URL(args.url), { authProvider: provider });
    await client.connect(transport);
    return { client, transport };
};
const use = async label => {
    const { client } = await connect();
    const tools = (await client.listTools()).tools.map(t => t.name);
    check(`${label}: tools/list`, tools.length > 0, `${tools.length} tools`);
    const me = await client.callTool({ name: 'dunning_me', arguments: {} });
    const who = me.structuredContent?.user?.email;
    check(`${label}: dunning_me as ${person}`, who === person && !me.isError, String(who));
    await client.close();
    return tools;
};

try {
    let transport;
    try {
        const c = await connect();
        transport = c.transport;
        check('the first connection needs a sign-in', false, 'connected without one');
    } catch (e) {
        check('the first connection needs a sign-in', e instanceof UnauthorizedError, String(e));
    }
    transport ??= new StreamableHTTPClientTransport(new URL(args.url), { authProvider: provider });
    check('the state came back', provider.callback?.get('state') === provider.sentState, String(provider.callback?.get('state')));
    await transport.finishAuth(provider.callback);
    check('a client registered itself', provider.client?.client_id?.startsWith('kd-') === true);
    check('tokens were issued', typeof provider.saved?.access_token === 'string');
    const tools = await use('after sign-in');
    check('the operator gets no admin tool', !tools.some(t => t.startsWith('dunning_webhooks_')));

    // Expired: the server answers 401 to the old token, and the SDK refreshes.
    const before = provider.saved;
    provider.saved = { ...before, access_token: 'expired.token.value' };
    await use('after the access token stopped working');
    check('the access token was refreshed', provider.saved.access_token !== before.access_token);
    check('the refresh token rotated', provider.saved.refresh_token !== before.refresh_token);
} catch (e) {
    console.error(e);
    check('the OAuth flow', false, String(e));
}
console.log(`ts-oauth-client: ${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
