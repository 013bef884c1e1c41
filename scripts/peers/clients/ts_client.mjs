// The TypeScript SDK client (@modelcontextprotocol/client 2.4.0) against a running
// kobana-dunning, with a real token.
//
// In each mode — legacy (the SDK's default: the 2025 `initialize` handshake), auto
// (`versionNegotiation: { mode: 'auto' }`: probes `server/discover`) and pinned 2026-07-28
// — it lists the tools, calls a read tool, reads a resource and gets a prompt. Against the
// demo data it then calls read tools of Domain I and II (charges, debtors, agreements,
// webhooks: structuredContent), reads the three PDF resources (a paid charge's settlement
// letter, a debtor's statement, an agreement's term: one base64 `blob`, `application/pdf`,
// `%PDF-` ... `%%EOF`, as many bytes as the tool's descriptor says), checks that an unpaid
// charge's letter is refused with NOT_SETTLED, gets two prompts with arguments
// (`settle_and_document`, `debtor_360`) and completes a prompt argument and a template
// variable (`completion/complete`). Wherever
// the 2026-07-28 era was negotiated it also completes the confirmation of a destructive
// tool: the SDK fulfils the server's `input_required` elicitation through the
// `elicitation/create` handler, which accepts. In the legacy era it checks that the same
// call is refused without executing (CONFIRMATION_REQUIRED).
//
//   node ts_client.mjs --url http://127.0.0.1:8080/ --token "$TOKEN"
//
// Run from a folder whose node_modules holds the SDK (scripts/peers/run copies it into
// .peers/js). Prints one line per check and closes with `ts-client: N passed, M failed`.
import { Client, ResourceNotFoundError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

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

const firstRecord = value => records(value).find(r => r && typeof r === 'object' && r.id);

// Calls a read tool and checks its structuredContent proper; `want(data)` -> [ok, detail].
async function readTool(client, label, name, toolArgs, want) {
    let result;
    try {
        result = await client.callTool({ name, arguments: toolArgs });
    } catch (e) {
        check(`${label} tools/call ${name}`, false, `error ${e?.code} ${e?.message}`);
        return undefined;
    }
    const data = result.structuredContent;
    const isObject = data !== null && typeof data === 'object' && !Array.isArray(data);
    let ok = !result.isError && isObject;
    let detail = ok ? '' : `isError ${result.isError}, structuredContent ${JSON.stringify(data)?.slice(0, 200)}`;
    if (ok && want) [ok, detail] = want(data);
    check(`${label} tools/call ${name} (structuredContent)`, ok, detail);
    return isObject ? data : undefined;
}

// Reads a PDF resource: one blob, application/pdf, %PDF- ... %%EOF, the descriptor's size.
async function readPdf(client, label, uri, descriptor) {
    const short = uri.replace('kobana://dunning/', '');
    let read;
    try {
        read = await client.readResource({ uri });
    } catch (e) {
        check(`${label} resources/read ${short} (PDF)`, false, `error ${e?.code} ${e?.message}`);
        return;
    }
    const contents = read.contents ?? [];
    const blob = contents.length === 1 ? contents[0].blob : undefined;
    const mime = contents[0]?.mimeType;
    const bytes = typeof blob === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(blob) ? Buffer.from(blob, 'base64') : Buffer.alloc(0);
    const trimmed = bytes.toString('latin1').trimEnd();
    const size = descriptor?.byte_size;
    const ok =
        blob !== undefined &&
        mime === 'application/pdf' &&
        trimmed.startsWith('%PDF-') &&
        trimmed.endsWith('%%EOF') &&
        (size === undefined || size === bytes.length);
    check(
        `${label} resources/read ${short} (PDF)`,
        ok,
        `${contents.length} contents, ${blob !== undefined ? 'blob' : 'no blob'}, ${mime}, ${bytes.length} bytes ` +
            `(descriptor ${size}), ${JSON.stringify(trimmed.slice(0, 8))}...${JSON.stringify(trimmed.slice(-6))}`
    );
}

const isPdfDescriptor = d => [d.content_type === 'application/pdf' && d.byte_size > 0, `${d.byte_size} bytes`];

// Domain I and II against the demo data: read tools, PDF resources, prompts with
// arguments and completions.
async function domainChecks(client, label, modern) {
    const paid = await readTool(client, label, 'dunning_charges_list', { status: 'paid', per_page: 5 }, d => [
        records(d).length > 0 && records(d).every(c => c.status === 'paid'),
        `${records(d).length} paid charges`
    ]);
    const charge = firstRecord(paid);
    if (!check(`${label} found a paid demo charge`, Boolean(charge?.debtor_id))) return;
    const [cid, did] = [charge.id, charge.debtor_id];
    await readTool(client, label, 'dunning_charges_get', { id: cid }, d => [d.id === cid && d.status === 'paid', `status ${d.status}`]);
    await readTool(client, label, 'dunning_debtors_list', { per_page: 5 }, d => [
        records(d).length > 0 && records(d).every(x => x.id),
        `${records(d).length} debtors`
    ]);
    await readTool(client, label, 'dunning_debtors_get', { id: did }, d => [d.id === did && Boolean(d.name), `name ${JSON.stringify(d.name)}`]);
    const agreements = await readTool(client, label, 'dunning_agreements_list', {}, d => [records(d).length > 0, `${records(d).length} agreements`]);
    const agreement = firstRecord(agreements);
    if (agreement) {
        await readTool(client, label, 'dunning_agreements_get', { id: agreement.id }, d => [
            d.id === agreement.id && Array.isArray(d.installments) && d.installments.length > 0,
            `status ${d.status}`
        ]);
    }
    await readTool(client, label, 'dunning_webhooks_list', {}, d => [
        records(d).length > 0 && records(d).every(w => !('secret' in w)),
        `${records(d).length} webhooks`
    ]);

    // PDF resources, each with the descriptor its tool returns.
    const { resourceTemplates } = await client.listResourceTemplates();
    const templates = new Set(resourceTemplates.map(t => t.uriTemplate));
    check(
        `${label} resources/templates/list has the PDF templates`,
        ['charges/{id}/settlement-letter', 'debtors/{id}/statement', 'agreements/{id}/term'].every(t => templates.has(`kobana://dunning/${t}`)),
        `${templates.size} templates`
    );
    const letter = await readTool(client, label, 'dunning_charges_settlement_letter', { id: cid }, isPdfDescriptor);
    await readPdf(client, label, `kobana://dunning/charges/${cid}/settlement-letter`, letter);
    const statement = await readTool(client, label, 'dunning_debtors_statement', { id: did, format: 'pdf' }, isPdfDescriptor);
    await readPdf(client, label, `kobana://dunning/debtors/${did}/statement`, statement);
    if (check(`${label} found a demo agreement`, agreement !== undefined)) {
        const term = await readTool(client, label, 'dunning_agreements_term', { id: agreement.id }, isPdfDescriptor);
        await readPdf(client, label, `kobana://dunning/agreements/${agreement.id}/term`, term);
    }

    // The letter of an unpaid charge exists as a URI but is not available: NOT_SETTLED
    // (-32602 in the 2026-07-28 era, -32002 in the 2025 one). The SDK turns
    // any -32002 whose data has `uri` into its ResourceNotFoundError, which re-codes it
    // -32602 with data `{uri}` only: in the 2025 era the reason does not reach the caller.
    let unpaid;
    for (const status of ['pending', 'overdue']) {
        const result = await client.callTool({ name: 'dunning_charges_list', arguments: { status, per_page: 1 } });
        unpaid = firstRecord(result.structuredContent);
        if (unpaid) break;
    }
    if (unpaid) {
        const what = `${label} resources/read letter of an unpaid charge refused (NOT_SETTLED)`;
        const uri = `kobana://dunning/charges/${unpaid.id}/settlement-letter`;
        try {
            await client.readResource({ uri });
            check(what, false, 'read succeeded');
        } catch (e) {
            const ok = modern
                ? e?.code === -32602 && e?.data?.uri === uri && e?.data?.reason === 'NOT_SETTLED'
                : ResourceNotFoundError.isInstance(e) && e.code === -32602 && e?.data?.uri === uri;
            check(modern ? what : `${label} resources/read letter of an unpaid charge refused (SDK: ResourceNotFoundError)`, ok, `${e?.constructor?.name} code ${e?.code}, data ${JSON.stringify(e?.data)}`);
        }
    }

    // Prompts with arguments: the messages name the entity.
    for (const [name, promptArgs, wanted] of [
        ['settle_and_document', { charge_id: cid }, cid],
        ['debtor_360', { debtor_id: did }, did]
    ]) {
        const got = await client.getPrompt({ name, arguments: promptArgs });
        const texts = got.messages.map(m => m.content?.text ?? '');
        check(
            `${label} prompts/get ${name} with ${Object.keys(promptArgs).join(', ')}`,
            got.messages.length > 0 && texts.some(t => t.includes(wanted)),
            `${got.messages.length} messages, ${texts.reduce((n, t) => n + t.length, 0)} chars`
        );
    }

    // completion/complete: a prompt argument and a template variable, by id prefix.
    if (check(`${label} server advertises completions`, client.getServerCapabilities()?.completions !== undefined)) {
        for (const [ref, argument, wanted] of [
            [{ type: 'ref/prompt', name: 'settle_and_document' }, 'charge_id', cid],
            [{ type: 'ref/resource', uri: 'kobana://dunning/debtors/{id}/statement' }, 'id', did]
        ]) {
            const done = await client.complete({ ref, argument: { name: argument, value: wanted.slice(0, 4) } });
            const values = done.completion?.values ?? [];
            check(
                `${label} completion/complete ${ref.name ?? ref.uri} ${argument}`,
                values.includes(wanted) && values.length <= 100,
                `${values.length} values, total ${done.completion?.total}, hasMore ${done.completion?.hasMore}`
            );
        }
    }
}

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

        try {
            await domainChecks(client, label, modern);
        } catch (e) {
            console.error(e);
            check(`${label} domain checks`, false, `${e?.name}: ${e?.message}`);
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
