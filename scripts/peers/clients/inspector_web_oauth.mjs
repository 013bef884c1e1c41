// The MCP Inspector's web UI, its own OAuth flow, in a real browser: the
// Inspector's web server (@modelcontextprotocol/inspector 2.12.0, `--web`) is started
// on free loopback ports with the product's URL as its ad-hoc server and no token;
// headless Chromium (Debian's `chromium`, driven by playwright-core) opens the UI,
// switches the server on, and the Inspector does the rest as it would for a person:
// discovery and dynamic registration (through its backend), then a redirect of the
// browser to the product's consent page. The script plays the person there (picks a
// demo member, approves); the browser comes back to the Inspector's /oauth/callback,
// which redeems the code and connects. Then it opens the Tools tab, checks the list,
// runs `dunning_me` and reads the member's login in the result on the page. A
// screenshot of the Inspector connected is saved.
//
// Why the UI and not only the CLI (inspector_oauth.sh): the web UI registers with its
// own redirect URI (http://127.0.0.1:PORT/oauth/callback), sends the browser itself to
// the page and back, and keeps its tokens in the browser session; none of that runs in
// the CLI's flow.
//
//   node inspector_web_oauth.mjs --url http://127.0.0.1:8080/ --inspector .peers/js/node_modules/.bin/mcp-inspector
//        [--person caio@demo.example] [--screenshot inspector-web.png] [--chromium /usr/bin/chromium]
//
// Every wait is bounded; the Inspector process is stopped (by its pid) at the end.
// Prints one line per check and closes with `inspector-web-oauth: N passed, M failed`.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';

const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v.replace(/^--/, ''), all[i + 1]]] : acc), [])
);
const target = new URL(args.url ?? 'http://127.0.0.1:8080/');
const inspectorBin = args.inspector;
const person = args.person ?? 'caio@demo.example';
const executablePath = args.chromium ?? process.env.CHROMIUM ?? '/usr/bin/chromium';
const started = Date.now();
const results = { passed: 0, failed: 0 };
const check = (label, ok, detail = '') => {
    results[ok ? 'passed' : 'failed'] += 1;
    console.log(`${ok ? 'ok    ' : 'FAILED'} ${label}${detail ? ` - ${detail}` : ''}`);
    return ok;
};
const secs = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

/** A port free on the loopback now (the Inspector needs a fixed CLIENT_PORT). */
const freePort = () =>
    new Promise((resolve, reject) => {
        const s = createServer();
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });

let inspector;
let browser;
const home = mkdtempSync(join(tmpdir(), 'inspector-web-'));
let inspectorLog = '';
try {
    if (!inspectorBin || !existsSync(inspectorBin)) throw new Error(`no Inspector at ${inspectorBin} (--inspector PATH)`);
    if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath} (apt-get install chromium, or --chromium PATH)`);

    // The Inspector's web server: its API token guards its own backend (the browser
    // passes it in the URL once); secrets in memory; no browser opened by it.
    const port = await freePort();
    const apiToken = randomBytes(16).toString('hex');
    inspector = spawn(inspectorBin, ['--web', '--transport', 'http', '--server-url', target.href], {
        env: {
            ...process.env,
            HOME: home,
            MCP_STORAGE_DIR: join(home, 'storage'),
            CLIENT_PORT: String(port),
            MCP_SANDBOX_PORT: '0',
            MCP_APP_ORIGIN_PORT: '0',
            MCP_AUTO_OPEN_ENABLED: 'false',
            MCP_INSPECTOR_API_TOKEN: apiToken,
            MCP_INSPECTOR_SECRET_STORE: 'memory',
            BROWSER: 'true'
        },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: false
    });
    inspector.stdout.on('data', d => (inspectorLog += d));
    inspector.stderr.on('data', d => (inspectorLog += d));
    const up = await new Promise(resolve => {
        const t = setInterval(() => {
            const m = inspectorLog.match(/up and running at:\s*(\S+)/);
            if (m || inspector.exitCode !== null) {
                clearInterval(t);
                clearTimeout(limit);
                resolve(m?.[1]);
            }
        }, 100);
        const limit = setTimeout(() => {
            clearInterval(t);
            resolve(undefined);
        }, 30000);
    });
    if (!check('the Inspector web UI starts', !!up, up ?? inspectorLog.slice(-300))) throw new Error('no Inspector');
    const ui = new URL(up);
    const callbackPrefix = `${ui.origin}/oauth/callback`;

    browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // No internet here: the UI's web fonts would only time out.
    await context.route(/fonts\.(googleapis|gstatic)\.com/, r => r.abort());
    const page = await context.newPage();
    page.setDefaultTimeout(20000);
    const seen = [];
    page.on('framenavigated', f => f === page.mainFrame() && seen.push(f.url()));

    await page.goto(up);
    const card = page.getByText(`${target.host}`, { exact: true }).first();
    await card.waitFor();
    check('the product is the Inspector server, disconnected', await page.getByText('Disconnected').first().isVisible(), target.host);

    // Switch it on. The server answers 401; the Inspector discovers the authorization
    // server, registers, and sends the browser to the consent page.
    await page.locator('.mantine-Switch-track').first().click();
    await page.waitForURL(u => u.href.startsWith(`${target.origin}/authorize?`), { timeout: 30000 });
    const authorize = new URL(page.url());
    check('the browser is sent to the consent page', true, `${authorize.pathname} (${secs()})`);
    check(
        'its redirect URI is the Inspector web callback',
        authorize.searchParams.get('redirect_uri') === callbackPrefix,
        authorize.searchParams.get('redirect_uri')
    );
    check('PKCE S256 and the resource are asked', authorize.searchParams.get('code_challenge_method') === 'S256' && !!authorize.searchParams.get('resource'));
    const text = await page.innerText('body');
    check('the page names the Inspector as the client', text.includes('MCP Inspector'), text.split('\n').find(l => l.includes('asks for access')));

    // The person: pick the member, approve.
    await page.check(`input[name="person"][value$="|${person}"]`);
    await page.click('button[value="approve"]');
    await page.waitForURL(u => u.origin === ui.origin && u.pathname === '/', { timeout: 30000 });
    const back = seen.find(u => u.startsWith(callbackPrefix));
    check('the browser came back to the Inspector callback with a code and iss', !!back && /[?&]code=/.test(back) && /[?&]iss=/.test(back), back?.replace(/code=[^&]+/, 'code=…').slice(0, 120));

    await page.getByText('Connected', { exact: true }).first().waitFor({ timeout: 30000 });
    check('the Inspector is connected', true, secs());

    // Tools: the list, then one call, read in the page.
    await page.getByText('Tools', { exact: true }).first().click();
    const heading = page.getByText(/^Tools \(\d+\)$/).first();
    await heading.waitFor();
    const count = Number((await heading.innerText()).match(/\d+/)[0]);
    check('the Tools tab lists the tools', count > 0, `${count} tools`);
    await page.getByText('dunning_me', { exact: true }).first().click();
    await page.getByRole('button', { name: 'Execute Tool' }).click();
    // The result panel shows the tool's JSON: the member signed in, with the scopes
    // narrowed to that member's role.
    await page.getByText('Results', { exact: true }).first().waitFor({ timeout: 30000 });
    const email = page.getByText(`"${person}"`).first();
    const ran = await email.waitFor({ timeout: 15000 }).then(() => true, () => false);
    const shown = await page.innerText('body');
    check(`dunning_me runs and answers as ${person}`, ran && shown.includes('"email"'), secs());
    if (args.screenshot) {
        await page.screenshot({ path: args.screenshot });
        check('screenshot saved', existsSync(args.screenshot), args.screenshot);
    }
} catch (e) {
    console.error(e);
    check('the Inspector web flow', false, String(e.message ?? e).split('\n')[0]);
    if (inspectorLog) console.error(`inspector output (tail):\n${inspectorLog.slice(-1500)}`);
} finally {
    await browser?.close().catch(() => {});
    if (inspector && inspector.exitCode === null) {
        inspector.kill('SIGTERM');
        await new Promise(r => {
            const t = setTimeout(() => {
                inspector.kill('SIGKILL');
                r();
            }, 5000);
            inspector.once('exit', () => {
                clearTimeout(t);
                r();
            });
        });
    }
    rmSync(home, { recursive: true, force: true });
}
console.log(`inspector-web-oauth: ${results.passed} passed, ${results.failed} failed (${secs()})`);
process.exit(results.failed ? 1 : 0);
