// The authorize page in a real browser: headless Chromium (Debian's
// `chromium`, driven by playwright-core with `executablePath`) opens the embedded
// authorization server's page for a freshly registered client, picks a demo member,
// approves, and the test reads the redirect on a loopback callback server; the code is
// redeemed (PKCE) and the token calls a tool as that member. It also checks that the
// page refuses to be framed, and saves a screenshot of the page.
//
//   node browser_authorize.mjs --url http://127.0.0.1:8080/ [--person caio@demo.example]
//        [--screenshot docs/authorize-page.png] [--chromium /usr/bin/chromium]
//
// Prints one line per check and closes with `browser-authorize: N passed, M failed`.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v.replace(/^--/, ''), all[i + 1]]] : acc), [])
);
const base = new URL(args.url ?? 'http://127.0.0.1:8080/');
const person = args.person ?? 'caio@demo.example';
const executablePath = args.chromium ?? process.env.CHROMIUM ?? '/usr/bin/chromium';
const results = { passed: 0, failed: 0 };
const check = (label, ok, detail = '') => {
    results[ok ? 'passed' : 'failed'] += 1;
    console.log(`${ok ? 'ok    ' : 'FAILED'} ${label}${detail ? ` - ${detail}` : ''}`);
    return ok;
};
const b64url = buf => buf.toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

let browser;
let callbackServer;
try {
    if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath} (apt-get install chromium, or --chromium PATH)`);
    // The client's side: a loopback callback that records the redirect.
    let resolveCallback;
    const callback = new Promise(r => (resolveCallback = r));
    callbackServer = createServer((req, res) => {
        resolveCallback(new URL(req.url, 'http://127.0.0.1'));
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('signed in; you may close this window');
    });
    await new Promise(r => callbackServer.listen(0, '127.0.0.1', r));
    const redirect = `http://127.0.0.1:${callbackServer.address().port}/callback`;

    const meta = await (await fetch(new URL('/.well-known/oauth-authorization-server', base))).json();
    const reg = await fetch(meta.registration_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Browser test client', redirect_uris: [redirect] })
    });
    const client = await reg.json();
    check('registered', reg.status === 201, client.client_id);

    const verifier = b64url(randomBytes(32));
    const state = b64url(randomBytes(12));
    const resource = base.href.replace(/\/$/, '');
    const authorize = new URL(meta.authorization_endpoint);
    for (const [k, v] of Object.entries({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirect,
        code_challenge: b64url(createHash('sha256').update(verifier).digest()),
        code_challenge_method: 'S256',
        state,
        scope: 'dunning.read dunning.write dunning.admin',
        resource
    }))
        authorize.searchParams.set(k, v);

    browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 900, height: 760 } });
    const page = await context.newPage();
    const answer = await page.goto(authorize.href);
    check('the page loads', answer.status() === 200, String(answer.status()));
    check('it names the client', (await page.textContent('body')).includes('Browser test client'));
    if (args.screenshot) {
        await page.screenshot({ path: args.screenshot, fullPage: true });
        check('screenshot saved', existsSync(args.screenshot), args.screenshot);
    }

    // A page of another origin cannot frame it.
    const framer = await context.newPage();
    await framer.setContent(`<iframe id="f" src="${authorize.href}" width="600" height="400"></iframe>`);
    await framer.waitForTimeout(1000);
    const framed = framer.frames().find(f => f.url().startsWith(meta.authorization_endpoint));
    let framedText = '';
    if (framed) framedText = await framed.evaluate(() => document.body?.innerText ?? '').catch(() => '');
    check('the page cannot be framed', !framedText.includes('Browser test client'));
    await framer.close();

    // Pick the member, approve.
    await page.check(`input[name="person"][value$="|${person}"]`);
    await page.click('button[value="approve"]');
    const back = await Promise.race([callback, new Promise((_, no) => setTimeout(() => no(new Error('no redirect within 15 s')), 15000))]);
    check('the browser came back to the client', back.pathname === '/callback');
    check('state round-tripped', back.searchParams.get('state') === state);
    check('iss names the server', back.searchParams.get('iss') === meta.issuer);
    const code = back.searchParams.get('code');
    check('a code', !!code);

    const token = await fetch(meta.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            client_id: client.client_id,
            redirect_uri: redirect,
            code_verifier: verifier,
            resource
        })
    });
    const t = await token.json();
    check('the code is redeemed', token.status === 200, t.scope ?? t.error);
    const me = await fetch(base, {
        method: 'POST',
        headers: {
            authorization: `Bearer ${t.access_token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18'
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'dunning_me', arguments: {} } })
    });
    const body = await me.json();
    check(`the token acts as ${person}`, body.result?.structuredContent?.user?.email === person, JSON.stringify(body).slice(0, 100));
} catch (e) {
    console.error(e);
    check('the browser flow', false, String(e.message ?? e));
} finally {
    await browser?.close();
    callbackServer?.close();
}
console.log(`browser-authorize: ${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
