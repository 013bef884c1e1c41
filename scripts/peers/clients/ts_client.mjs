// The TypeScript SDK client (@modelcontextprotocol/client 2.4.0) against a running
// kobana-dunning, with a real token.
//
// In each mode — legacy (the SDK's default: the 2025 `initialize` handshake), auto
// (`versionNegotiation: { mode: 'auto' }`: probes `server/discover`) and pinned 2026-07-28
// — it lists the tools, calls a read tool, reads a resource and gets a prompt. Wherever
// the 2026-07-28 era was negotiated it also completes the confirmation of a destructive
// tool: the SDK fulfils the server's `input_required` elicitation through the
// `elicitation/create` handler, which accepts. In the legacy era it checks that the same
// call is refused without executing (CONFIRMATION_REQUIRED).
//
//   node ts_client.mjs --url http://127.0.0.1:8080/ --token "$TOKEN"
//
// Run from a folder whose node_modules holds the SDK (scripts/peers/run copies it into
// .peers/js). Prints one line per check and closes with `ts-client: N passed, M failed`.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v.replace(/^--/, ''), all[i + 1]]] : acc), [])
);
if (!args.url || !args.token) {
    console.error('usage: node ts_client.mjs --url URL --token TOKEN');
    process.exit(2);
}
const MODERN = '2026-07-28';
const results = { passed: 0, failed: 0 };
const check = (label, ok, detail = '') => {
    results[ok ? 'passed' : 'failed'] += 1;
    console.log(`${ok ? 'ok    ' : 'FAILED'} ${label}${detail ? ` - ${detail}` : ''}`);
    return ok;
};

const structured = result => {
    if (result.structuredContent !== undefined) return result.structuredContent;
    for (const block of result.content ?? []) {
        if (block.type === 'text') {
            try {
                return JSON.parse(block.text);
            } catch {
                return block.text;
            }
        }
    }
    return undefined;
};
const records = value => {
    if (Array.isArray(value)) return value;
    if (value && typeof value === 'object') {
        for (const key of ['items', 'data', 'charges', 'results']) if (Array.isArray(value[key])) return value[key];
        for (const v of Object.values(value)) if (Array.isArray(v) && v.length && typeof v[0] === 'object') return v;
    }
    return [];
};

async function openCharge(client) {
    for (const status of ['overdue', 'pending', undefined]) {
        const result = await client.callTool({ name: 'dunning_charges_list', arguments: status ? { status } : {} });
        if (result.isError) continue;
        const charge = records(structured(result)).find(c => ['pending', 'overdue', 'open'].includes(c.status) && c.id);
        if (charge) return charge.id;
    }
    return undefined;
}

async function runMode(name, negotiation) {
    const label = `[${name}]`;
    const asked = [];
    const client = new Client(
        { name: 'kobana-dunning-peers', version: '1.0.0' },
        { capabilities: { elicitation: {} }, ...(negotiation ? { versionNegotiation: negotiation } : {}) }
    );
    client.setRequestHandler('elicitation/create', async request => {
        asked.push(request.params.message);
        const props = request.params.requestedSchema?.properties ?? {};
        const content = Object.fromEntries(
            Object.entries(props)
                .filter(([, s]) => s.type === 'boolean')
                .map(([k]) => [k, true])
        );
        return { action: 'accept', content };
    });
    const transport = new StreamableHTTPClientTransport(new URL(args.url), {
        requestInit: { headers: { Authorization: `Bearer ${args.token}` } }
    });
    await client.connect(transport);
    try {
        const version = client.getNegotiatedProtocolVersion?.();
        const modern = version === MODERN;
        check(`${label} connected`, name === 'legacy' ? !modern : modern, `protocol ${version}`);

        const { tools } = await client.listTools();
        check(`${label} tools/list`, tools.length > 0 && tools.some(t => t.name === 'dunning_me'), `${tools.length} tools`);

        const me = await client.callTool({ name: 'dunning_me', arguments: {} });
        check(`${label} tools/call dunning_me (read)`, !me.isError && structured(me) !== undefined);

        const { resources } = await client.listResources();
        const uri = resources.some(r => r.uri === 'kobana://dunning/me') ? 'kobana://dunning/me' : resources[0]?.uri;
        if (check(`${label} resources/list`, uri !== undefined, `${resources.length} resources`)) {
            const read = await client.readResource({ uri });
            check(`${label} resources/read ${uri}`, read.contents.length > 0);
        }

        const { prompts } = await client.listPrompts();
        const prompt = prompts.find(p => !(p.arguments ?? []).some(a => a.required));
        if (check(`${label} prompts/list`, prompt !== undefined, `${prompts.length} prompts`)) {
            const got = await client.getPrompt({ name: prompt.name, arguments: {} });
            check(`${label} prompts/get ${prompt.name}`, got.messages.length > 0);
        }

        const charge = await openCharge(client);
        if (!check(`${label} found an open demo charge`, charge !== undefined)) return;
        const result = await client.callTool({ name: 'dunning_charges_cancel', arguments: { id: charge } });
        if (modern) {
            check(
                `${label} destructive dunning_charges_cancel confirmed through elicitation`,
                !result.isError && asked.length === 1,
                `asked ${JSON.stringify(asked)}, result ${JSON.stringify(structured(result)).slice(0, 200)}`
            );
            const after = await client.callTool({ name: 'dunning_charges_get', arguments: { id: charge } });
            const status = structured(after)?.status;
            check(`${label} the charge is cancelled`, ['cancelled', 'canceled'].includes(status), `status ${status}`);
        } else {
            const code = structured(result)?.error?.code;
            check(
                `${label} destructive call refused without a 2026 client`,
                result.isError === true && code === 'CONFIRMATION_REQUIRED' && asked.length === 0,
                `code ${code}`
            );
        }
    } finally {
        await client.close();
    }
}

for (const [name, negotiation] of [
    ['legacy', undefined],
    ['auto', { mode: 'auto' }],
    [MODERN, { mode: { pin: MODERN } }]
]) {
    try {
        await runMode(name, negotiation);
    } catch (e) {
        console.error(e);
        check(`[${name}] session`, false, `${e?.name}: ${e?.message}`);
    }
}
console.log(`ts-client: ${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
