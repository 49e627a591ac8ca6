#!/usr/bin/env node
// toolrun mcp seen by a real MCP client: the official TypeScript SDK's
// Client over its StdioClientTransport, which spawns the server command
// given after `--`. The same scenarios run against a local server
// (`toolrun mcp --root DIR`) and against one in a box
// (`docker exec -i BOX toolrun mcp`).
//
//   node client.mjs [--scenario NAME[,NAME...]] [--list] -- COMMAND [ARGS...]
//
// Output is TAP: one test per scenario, its checks as comments; the exit
// status is 1 if any scenario failed, 2 for a usage error. Every file a
// scenario makes is in the server's root (its session's working directory)
// under a name of its own, reached through the server's tools, never
// through this machine's file system: the root may be in a box.

import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Ajv from 'ajv';

const TOOLS = ['bash', 'bash_output', 'bash_input', 'bash_interrupt', 'bash_kill',
	'read_file', 'write_file', 'edit_file', 'search'];
// `--tools codex`: Codex's shell tools instead of bash*; the file tools stay.
const CODEX_TOOLS = ['exec_command', 'write_stdin', 'read_file', 'write_file', 'edit_file', 'search'];
const PROTOCOL_LATEST = '2025-11-25';
const PROTOCOL_PREVIOUS = '2025-06-18';
const STATES = ['done', 'running', 'waiting_input', 'idle', 'closed'];

// ---------------------------------------------------------------------
// Checks

class Failure extends Error {}

let checks = [];
function note(msg) { checks.push(msg); }
function check(cond, msg, detail) {
	if (!cond) {
		const d = detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`;
		throw new Failure(`${msg}${d}`);
	}
	note(`ok: ${msg}`);
}

function short(v, n = 600) {
	const s = typeof v === 'string' ? v : JSON.stringify(v);
	return s.length > n ? `${s.slice(0, n / 2)} ... ${s.slice(-n / 2)}` : s;
}

const ajv = new Ajv({ strict: false, allErrors: true });
const validators = new Map();

// Tools as listed, their schemas compiled by ajv (independently of the
// SDK's own validation).
async function listTools(client) {
	const { tools } = await client.listTools();
	for (const t of tools) {
		if (t.outputSchema) validators.set(t.name, ajv.compile(t.outputSchema));
	}
	return tools;
}

function textOf(result) {
	check(Array.isArray(result.content) && result.content.length === 1 &&
		result.content[0].type === 'text' && typeof result.content[0].text === 'string',
		'one text content block', short(result.content));
	return result.content[0].text;
}

// A tool's success: structuredContent valid against its outputSchema, one
// text block.
function good(tool, result) {
	check(result.isError !== true, `${tool}: not an error`, short(result));
	check(result.structuredContent && typeof result.structuredContent === 'object',
		`${tool}: structuredContent`, short(result));
	const v = validators.get(tool);
	check(v !== undefined, `${tool}: an outputSchema to check against`);
	check(v(result.structuredContent), `${tool}: structuredContent valid against the outputSchema (ajv)`,
		`${ajv.errorsText(v.errors)} in ${short(result.structuredContent)}`);
	textOf(result);
	return result.structuredContent;
}

// A tool's refusal: isError, no structuredContent, "CATEGORY CODE: message".
function refused(tool, result, category) {
	check(result.isError === true, `${tool}: isError`, short(result));
	check(result.structuredContent === undefined, `${tool}: no structuredContent on an error`, short(result));
	const text = textOf(result);
	const m = /^([A-Z]+) ([A-Za-z0-9_.-]+): ./.exec(text);
	check(m !== null, `${tool}: error text is "CATEGORY CODE: message"`, text);
	if (category) check(m[1] === category, `${tool}: category ${category}`, text);
	return text;
}

async function call(client, name, args, options) {
	return client.callTool({ name, arguments: args }, undefined, options);
}

// A bash-family result in a state.
function bashIs(tool, result, state) {
	const s = good(tool, result);
	check(STATES.includes(s.state), `${tool}: state is one of ${STATES.join('|')}`, s.state);
	if (state) check(s.state === state, `${tool}: state ${state}`, short(s));
	return s;
}

function unique(tag) {
	return `mcp-${tag}-${process.pid}-${Date.now().toString(36)}`;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------
// The server, through the SDK

let serverCommand = [];
let stderrTail = '';

// extra: arguments after the server command's own (`--tools codex`).
function transportFor(extra = []) {
	const t = new StdioClientTransport({
		command: serverCommand[0],
		args: serverCommand.slice(1).concat(extra),
		env: { ...process.env },
		stderr: 'pipe',
	});
	t.stderr?.on('data', (d) => {
		stderrTail = (stderrTail + d.toString()).slice(-4000);
	});
	return t;
}

// connect([rewriteVersion]): a connected client; with rewriteVersion, the
// initialize request asks for that protocol version instead of the SDK's
// latest (the SDK always asks for its latest).
async function connect(rewriteVersion, extra) {
	const transport = transportFor(extra);
	let asked;
	let answered;
	const send = transport.send.bind(transport);
	transport.send = (message, opts) => {
		if (message.method === 'initialize') {
			if (rewriteVersion) message = { ...message, params: { ...message.params, protocolVersion: rewriteVersion } };
			asked = message.params.protocolVersion;
		}
		return send(message, opts);
	};
	const client = new Client({ name: 'toolrun-mcp-test', version: '1.0.0' }, { capabilities: {} });
	const onmessage = () => {};
	void onmessage;
	// The version the server answered, seen by the transport.
	const setv = transport.setProtocolVersion?.bind(transport);
	transport.setProtocolVersion = (v) => { answered = v; setv?.(v); };
	await client.connect(transport);
	return { client, transport, asked, answered: () => answered };
}

async function withClient(fn, rewriteVersion, extra) {
	const c = await connect(rewriteVersion, extra);
	try {
		return await fn(c.client, c);
	} finally {
		await c.client.close().catch(() => {});
	}
}

// A client of a server offering the tool set (`--tools SET`), its tools
// listed (their output schemas compiled).
async function withTools(set, fn) {
	return withClient(async (client) => {
		await listTools(client);
		return fn(client);
	}, undefined, ['--tools', set]);
}

// An exec_command or write_stdin result in a state; session_id is an
// integer while the command runs and null once its end is reported.
function execIs(tool, result, state) {
	const s = good(tool, result);
	check(STATES.includes(s.state), `${tool}: state is one of ${STATES.join('|')}`, s.state);
	if (state) check(s.state === state, `${tool}: state ${state}`, short(s));
	const live = s.state === 'running' || s.state === 'waiting_input';
	check(live ? Number.isInteger(s.session_id) && s.session_id > 0 : s.session_id === null,
		`${tool}: session_id ${live ? 'an integer while it runs' : 'null once it has ended'}`, short(s));
	return s;
}

// ---------------------------------------------------------------------
// Scenarios

const scenarios = {};

scenarios.initialize = async () => {
	await withClient(async (client, c) => {
		check(c.asked === PROTOCOL_LATEST, `asked for ${PROTOCOL_LATEST}`, c.asked);
		check(c.answered() === PROTOCOL_LATEST, `server answered ${PROTOCOL_LATEST}`, c.answered());
		const info = client.getServerVersion();
		check(info && info.name === 'toolrun', 'serverInfo.name is toolrun', info);
		check(typeof info.version === 'string' && info.version.length > 0, 'serverInfo.version', info);
		const caps = client.getServerCapabilities();
		check(caps && typeof caps.tools === 'object', 'capabilities.tools', caps);
		const pong = await client.ping();
		check(pong && typeof pong === 'object', 'ping answers', pong);
	});
	await withClient(async (client, c) => {
		check(c.asked === PROTOCOL_PREVIOUS, `asked for ${PROTOCOL_PREVIOUS}`, c.asked);
		check(c.answered() === PROTOCOL_PREVIOUS, `server answered ${PROTOCOL_PREVIOUS}`, c.answered());
		await client.ping();
		const { tools } = await client.listTools();
		check(tools.length === TOOLS.length, `tools/list under ${PROTOCOL_PREVIOUS}`, tools.length);
	}, PROTOCOL_PREVIOUS);
	await withClient(async (client, c) => {
		check(c.answered() === PROTOCOL_LATEST, `a version it does not know (2024-11-05) is answered with ${PROTOCOL_LATEST}`, c.answered());
		await client.ping();
	}, '2024-11-05');
};

scenarios['tools-list'] = async () => {
	await withClient(async (client) => {
		const tools = await listTools(client);
		const names = tools.map((t) => t.name).sort();
		check(JSON.stringify(names) === JSON.stringify([...TOOLS].sort()), `the ${TOOLS.length} tools`, names);
		for (const t of tools) {
			check(typeof t.description === 'string' && t.description.length > 0, `${t.name}: a description`);
			check(t.inputSchema && t.inputSchema.type === 'object', `${t.name}: inputSchema of type object`, t.inputSchema);
			check(t.outputSchema && t.outputSchema.type === 'object', `${t.name}: outputSchema of type object`, t.outputSchema);
			let compiled = true;
			try { ajv.compile(t.inputSchema); } catch (e) { compiled = e.message; }
			check(compiled === true, `${t.name}: inputSchema compiles`, String(compiled));
		}
		const req = (n) => tools.find((t) => t.name === n).inputSchema.required || [];
		check(req('bash').includes('command'), 'bash requires command');
		check(req('read_file').includes('path'), 'read_file requires path');
		check(req('write_file').includes('path') && req('write_file').includes('content'), 'write_file requires path and content');
		check(['path', 'old_string', 'new_string'].every((k) => req('edit_file').includes(k)), 'edit_file requires path, old_string, new_string');
		check(req('search').includes('query'), 'search requires query');
		// bash_input's text may be left out (eof alone); noted, not required.
		note(`bash_input required: ${JSON.stringify(req('bash_input'))}`);
	});
};

scenarios['tools-each'] = async () => {
	await withClient(async (client) => {
		await listTools(client); // also primes the SDK's own output validation
		const f = unique('each') + '.txt';
		const word = unique('word').replace(/-/g, '');
		let r = good('write_file', await call(client, 'write_file', { path: f, content: `alpha\n${word} beta\ngamma\n` }));
		check(r.created === true && r.bytes === `alpha\n${word} beta\ngamma\n`.length, 'write_file: created, bytes', r);
		r = good('read_file', await call(client, 'read_file', { path: f }));
		check(r.total_lines === 3 && r.first_line === 1 && r.last_line === 3 && r.truncated === false && r.binary === false,
			'read_file: lines 1-3 of 3, whole, text', r);
		check(r.text.includes('alpha') && r.text.includes(`${word} beta`) && /\b2\b/.test(r.text), 'read_file: numbered lines', r.text);
		r = good('read_file', await call(client, 'read_file', { path: f, offset: 2, limit: 1 }));
		check(r.first_line === 2 && r.last_line === 2 && r.text.includes(word) && !r.text.includes('gamma'), 'read_file: offset 2 limit 1', r);
		r = good('edit_file', await call(client, 'edit_file', { path: f, old_string: 'gamma', new_string: 'delta' }));
		check(r.replacements === 1, 'edit_file: one replacement', r);
		let text = refused('edit_file', await call(client, 'edit_file', { path: f, old_string: 'no such text', new_string: 'x' }), 'EXECUTION');
		check(text.includes('old_string not found'), 'edit_file: its error names the argument as the schema does', text);
		r = good('read_file', await call(client, 'read_file', { path: f, limit: 10 }));
		check(r.text.includes('delta') && !r.text.includes('gamma'), 'edit_file: the file changed', r.text);
		r = good('search', await call(client, 'search', { query: word, limit: 5 }));
		check(r.query === word, 'search: the query echoed', r);
		check(r.hits.some((h) => h.path.endsWith(f)), 'search: the file is a hit', r);
		r = bashIs('bash', await call(client, 'bash', { command: `echo hello; echo oops >&2; cat ${f} | wc -l` }), 'done');
		check(r.stdout === 'hello\n3\n' && r.stderr === 'oops\n' && r.exit_code === 0 && r.signal === null,
			'bash: stdout, stderr, exit 0', r);
		check(typeof r.session === 'string' && r.session.length > 0 && Number.isInteger(r.command_number) && Number.isInteger(r.duration_ms),
			'bash: session, command_number, duration_ms', r);
		r = bashIs('bash', await call(client, 'bash', { command: 'exit_with() { return $1; }; exit_with 7' }), 'done');
		check(r.exit_code === 7, 'bash: exit status 7', r);
		// bash_output with nothing running.
		r = bashIs('bash_output', await call(client, 'bash_output', { timeout: 1 }));
		note(`bash_output idle: state ${r.state}`);
		// bash_input to a command that reads.
		r = bashIs('bash', await call(client, 'bash', { command: 'read x; echo got $x', timeout: 2 }), 'waiting_input');
		r = bashIs('bash_input', await call(client, 'bash_input', { text: 'abc' }), 'done');
		check(r.stdout.includes('got abc') && r.exit_code === 0, 'bash_input: the command read it', r);
		// bash_interrupt of a running command.
		r = bashIs('bash', await call(client, 'bash', { command: 'sleep 60', timeout: 1 }), 'running');
		r = bashIs('bash_interrupt', await call(client, 'bash_interrupt', {}));
		if (r.state !== 'done') r = bashIs('bash_output', await call(client, 'bash_output', { timeout: 10 }), 'done');
		check(r.state === 'done' && (r.signal === 'SIGINT' || r.exit_code === 130), 'bash_interrupt: the command ended by SIGINT', r);
		r = bashIs('bash', await call(client, 'bash', { command: 'echo still' }), 'done');
		check(r.stdout === 'still\n', 'the session serves after the interrupt', r);
	});
};

scenarios.session = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const d = unique('dir');
		let r = bashIs('bash', await call(client, 'bash', { command: `mkdir -p ${d} && cd ${d} && export MCP_VAR=kept-${d} && count=41` }), 'done');
		check(r.exit_code === 0, 'cd + export', r);
		const sid = r.session;
		const n = r.command_number;
		r = bashIs('bash', await call(client, 'bash', { command: 'echo "$MCP_VAR"; basename "$PWD"; echo $((count + 1))' }), 'done');
		check(r.stdout === `kept-${d}\n${d}\n42\n`, 'the next call sees the directory and the variables', r);
		check(r.session === sid, 'the same session', r);
		check(r.command_number === n + 1, 'command_number counts up', r);
		// A command that waits for input.
		r = bashIs('bash', await call(client, 'bash', { command: 'echo ask; read a; read b; echo "got $a and $b"', timeout: 2 }), 'waiting_input');
		check(r.stdout.includes('ask'), 'output before the read is there', r);
		r = bashIs('bash_input', await call(client, 'bash_input', { text: 'one', timeout: 2 }), 'waiting_input');
		r = bashIs('bash_input', await call(client, 'bash_input', { text: 'two' }), 'done');
		check(r.stdout.includes('got one and two') && r.exit_code === 0, 'two inputs, then done', r);
		// A command that outlives its timeout, then bash_output.
		r = bashIs('bash', await call(client, 'bash', { command: 'sleep 2; echo late', timeout: 1 }), 'running');
		r = bashIs('bash_output', await call(client, 'bash_output', { timeout: 10 }), 'done');
		check(r.stdout.includes('late') && r.exit_code === 0, 'bash_output collects the rest', r);
		// An explicit session argument: the same session by its id.
		r = bashIs('bash', await call(client, 'bash', { command: 'basename "$PWD"', session: sid }), 'done');
		check(r.stdout === `${d}\n` && r.session === sid, 'session: ID names the same session', r);
		// eof: a command that reads to the end of its input (bash's own
		// read: a listed tool reading the input is a tool job of toolrund's,
		// seen as running). Last: without a terminal, eof closes the
		// session's input for the commands after it too (docs/sessions.md).
		r = bashIs('bash', await call(client, 'bash', { command: 'n=0; while read -r l; do n=$((n + 1)); done; echo "lines $n"', timeout: 2 }), 'waiting_input');
		r = bashIs('bash_input', await call(client, 'bash_input', { text: 'x\ny', eof: true }), 'done');
		check(r.stdout === 'lines 2\n', 'bash_input eof ends the input', r);
	});
};

scenarios['large-output'] = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const res = await call(client, 'bash', { command: 'seq 1 100000', timeout: 60 });
		const r = bashIs('bash', res, 'done');
		check(r.exit_code === 0, 'exit 0', r.exit_code);
		// The text's last line repeats the cut: models miss a notice in
		// the middle of a long result.
		const marker = /\.\.\.\[toolrun cut \d+ lines \(\d+ bytes\) of stdout here: (lines \d+-\d+ of 100000);/.exec(r.stdout);
		check(marker !== null, 'the marker gives the range in lines', short(r.stdout, 300));
		const last = textOf(res).split('\n').pop();
		check(last === `[cut: stdout ${marker[1]} (at the marker above); the whole stdout is in ${r.stdout_spill}]`,
			'the last line repeats the range and names the spill file', last);
		check(/\.\.\.\[toolrun cut /.test(r.stdout), 'a marker line in stdout', short(r.stdout, 300));
		check(r.stdout.startsWith('1\n2\n') && r.stdout.endsWith('99999\n100000\n'), 'head and tail kept', short(r.stdout, 300));
		check(r.stdout.length < 20000, 'cut to its budget', r.stdout.length);
		check(r.stdout_dropped_bytes > 0 && r.stdout_dropped_lines > 0, 'dropped bytes and lines counted',
			{ b: r.stdout_dropped_bytes, l: r.stdout_dropped_lines });
		check(typeof r.stdout_spill === 'string' && r.stdout_spill.length > 0, 'a spill path', r.stdout_spill);
		check(r.stdout.includes(r.stdout_spill), 'the marker names the spill file', short(r.stdout, 300));
		check(r.stderr_spill === null && r.stderr_dropped_bytes === 0, 'stderr not cut', r);
		const w = bashIs('bash', await call(client, 'bash', { command: `wc -l < '${r.stdout_spill}'; tail -n 1 '${r.stdout_spill}'` }), 'done');
		check(w.stdout === '100000\n100000\n', 'the spill file holds every line', w.stdout);
	});
};

scenarios.cancel = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const m = unique('cancel');
		let r = bashIs('bash', await call(client, 'bash', { command: `rm -f ${m}; echo ready` }), 'done');
		const ac = new AbortController();
		const started = Date.now();
		const p = call(client, 'bash', { command: `sleep 4; touch ${m}; sleep 30`, timeout: 60 }, { signal: ac.signal, timeout: 120000 });
		await sleep(1000);
		ac.abort('test: cancelled');
		let aborted = false;
		try { await p; } catch (e) { aborted = true; note(`the call rejected: ${e.message}`); }
		check(aborted, 'the call was abandoned on the client side');
		const t0 = Date.now();
		r = bashIs('bash', await call(client, 'bash', { command: 'echo alive', timeout: 10 }), 'done');
		const took = Date.now() - t0;
		check(r.stdout === 'alive\n', 'the next call in the session runs', r);
		// Not after the cancelled command, which would hold the session
		// 33 s more; the bound leaves room for a loaded machine.
		check(took < 10000, 'and answers promptly (< 10 s), not after the cancelled command', `${took} ms`);
		note(`next call took ${took} ms`);
		// Past the moment the cancelled command would have made its file.
		const wait = 6000 - (Date.now() - started);
		if (wait > 0) await sleep(wait);
		r = bashIs('bash', await call(client, 'bash', { command: `test -e ${m} && echo present || echo absent` }), 'done');
		check(r.stdout === 'absent\n', 'the cancelled command was interrupted: its later file is absent', r.stdout);
		r = bashIs('bash', await call(client, 'bash', { command: 'echo "status of the last: $?"' }), 'done');
		note(`after the cancel: ${r.stdout.trim()}`);
	});
};

// A cancelled call that named another session interrupts that session's
// command, and leaves the server's own session alone.
scenarios['cancel-other-session'] = async () => {
	// The other session: a second server's own, which lives as long as
	// that server does.
	await withClient(async (b) => {
		await listTools(b);
		const other = bashIs('bash', await call(b, 'bash', { command: 'echo other' }), 'done').session;
		await cancelInOther(other);
	});
};

async function cancelInOther(other) {
	await withClient(async (client) => {
		await listTools(client);
		const own = unique('own'), m = unique('othercancel');
		bashIs('bash', await call(client, 'bash', { command: `rm -f ${own} ${m}; echo ready` }), 'done');
		// The server's own session runs on while the other call waits.
		const bg = bashIs('bash', await call(client, 'bash', { command: `sleep 6; touch ${own}`, timeout: 0.5 }), 'running');
		check(bg.session !== other, 'two sessions', { own: bg.session, other });
		const ac = new AbortController();
		const p = call(client, 'bash', { session: other, command: `sleep 3; touch ${m}; sleep 30`, timeout: 60 },
			{ signal: ac.signal, timeout: 120000 });
		await sleep(1000);
		ac.abort('test: cancelled');
		try { await p; } catch (e) { note(`the call rejected: ${e.message}`); }
		const t0 = Date.now();
		const r = bashIs('bash', await call(client, 'bash', { session: other, command: 'echo alive', timeout: 10 }), 'done');
		check(r.stdout === 'alive\n', 'the other session runs the next command', r);
		check(Date.now() - t0 < 10000, 'at once: its cancelled command was interrupted', `${Date.now() - t0} ms`);
		// The server's own command finishes, not interrupted.
		const done = bashIs('bash_output', await call(client, 'bash_output', { timeout: 30 }), 'done');
		check(done.exit_code === 0, "the server's own command ran to its end", done);
		const seen = bashIs('bash', await call(client, 'bash', { command: `test -e ${own} && echo own; test -e ${m} || echo no-other` }), 'done');
		check(seen.stdout === 'own\nno-other\n', "the own session's file is there, the cancelled one's is not", seen.stdout);
	});
}

// bash_kill: a command that ignores Ctrl-C is killed and the shell kept;
// a loop in the shell itself is interrupted; one in a shell that ignores
// SIGINT ends the session, which the result says.
scenarios.kill = async () => {
	await withClient(async (client) => {
		await listTools(client);
		let r = bashIs('bash', await call(client, 'bash', { command: 'V=kept-by-kill; trap "" INT; sleep 60', timeout: 1 }), 'running');
		const sid = r.session;
		r = bashIs('bash_interrupt', await call(client, 'bash_interrupt', { timeout: 2 }), 'running');
		note('bash_interrupt: the command ignores SIGINT and still runs');
		let res = await call(client, 'bash_kill', { timeout: 30 });
		r = bashIs('bash_kill', res, 'done');
		check(r.exit_code === 137 && r.session === sid, 'bash_kill: done, exit 137 (128+SIGKILL)', r);
		let last = textOf(res).split('\n').pop();
		check(/killed/.test(last) && /shell and its state .* kept/.test(last), 'the status line says the processes were killed and the shell kept', last);
		r = bashIs('bash', await call(client, 'bash', { command: 'echo "$V"' }), 'done');
		check(r.stdout === 'kept-by-kill\n' && r.session === sid, 'the next command runs in the same shell, its variable there', r);
		// Another signal, by name and by number.
		bashIs('bash', await call(client, 'bash', { command: 'sleep 60', timeout: 1 }), 'running');
		r = bashIs('bash_kill', await call(client, 'bash_kill', { signal: 'TERM', timeout: 30 }), 'done');
		check(r.exit_code === 143, 'signal TERM: exit 143', r);
		bashIs('bash', await call(client, 'bash', { command: 'sleep 60', timeout: 1 }), 'running');
		r = bashIs('bash_kill', await call(client, 'bash_kill', { signal: 10, timeout: 30 }), 'done');
		check(r.exit_code === 138, 'signal 10 (SIGUSR1): exit 138', r);
		refused('bash_kill', await call(client, 'bash_kill', { signal: 'NOSUCH' }), 'SYNTAX');
		refused('bash_kill', await call(client, 'bash_kill', { signal: 65 }), 'SYNTAX');
		// A loop of builtins: no process below the shell to kill.
		bashIs('bash', await call(client, 'bash', { command: 'while :; do :; done', timeout: 1 }), 'running');
		r = bashIs('bash_kill', await call(client, 'bash_kill', { timeout: 30 }), 'done');
		check(r.session === sid, 'a loop in the shell ends, the session kept', r);
		r = bashIs('bash', await call(client, 'bash', { command: 'echo "$V"' }), 'done');
		check(r.stdout === 'kept-by-kill\n' && r.session === sid, 'the shell is the same one', r);
		// The same loop in a shell that ignores SIGINT: only ending the
		// shell stops it.
		bashIs('bash', await call(client, 'bash', { command: 'trap "" INT; while :; do :; done', timeout: 1 }), 'running');
		res = await call(client, 'bash_kill', { timeout: 30 });
		r = bashIs('bash_kill', res, 'closed');
		check(/ignores SIGINT/.test(r.message), "the session was closed, the daemon's reason given", r.message);
		last = textOf(res).split('\n').pop();
		check(last.includes(`session ${sid} closed`) && last.includes(r.message), 'the status line says the session was closed, and why', last);
		r = bashIs('bash', await call(client, 'bash', { command: 'echo "new ${V:-shell}"' }), 'done');
		check(r.stdout === 'new shell\n' && r.session !== sid, 'the next bash call starts a new session', r);
	});
};

// Lines written in one write: calls, their cancellations and a ping. A
// cancelled call still queued never runs and gets no answer; the ping is
// answered at once, before the call being served.
scenarios.pipelined = async () => {
	const srv = rawServer();
	const { send, next } = srv;
	const rpc = (id, command) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
		params: { name: 'bash', arguments: { command } } });
	const cancel = (id) => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });
	try {
		await srv.initialize();
		const m2 = unique('piped2'), m3 = unique('piped3');
		srv.child.stdin.write([rpc(1, 'sleep 2; echo one'), rpc(2, `touch ${m2}`), rpc(3, `touch ${m3}`),
			cancel(2), cancel(3), JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' })].join('\n') + '\n');
		let m = await next('the ping');
		check(m.id === 4 && m.result, 'the ping is answered first, while call 1 runs', m);
		m = await next('call 1', 30000);
		check(m.id === 1 && m.result.structuredContent.stdout === 'one\n', 'call 1 ran', m);
		send(rpc(5, `test -e ${m2} && echo ran2; test -e ${m3} && echo ran3; echo checked`));
		m = await next('the check', 30000);
		check(m.id === 5, 'no answer for the cancelled calls 2 and 3', m);
		check(m.result.structuredContent.stdout === 'checked\n', 'calls 2 and 3 never ran', m.result.structuredContent.stdout);
		// Many long calls, each cancelled, in one write: none runs.
		const n = 40, lines = [];
		for (let i = 0; i < n; i++) lines.push(rpc(100 + i, 'sleep 30'));
		for (let i = 0; i < n; i++) lines.push(cancel(100 + i));
		lines.push(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' }), rpc(7, 'echo after'));
		srv.child.stdin.write(lines.join('\n') + '\n');
		m = await next('the ping behind 40 cancelled calls');
		check(m.id === 6, 'the ping is answered', m);
		m = await next('the call after 40 cancelled ones', 30000);
		check(m.id === 7 && m.result.structuredContent.stdout === 'after\n', `the ${n} cancelled calls never ran: the next one is answered`, m);
		srv.child.stdin.end();
		const ex = await Promise.race([srv.exited, sleep(30000).then(() => 'timeout')]);
		check(ex !== 'timeout' && ex.code === 0, 'EOF: exit 0', ex);
		check(srv.state.read === srv.lines.length, 'nothing more written', srv.lines.slice(srv.state.read));
	} finally {
		srv.kill();
	}
};

scenarios.progress = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const seen = [];
		const r = bashIs('bash', await call(client, 'bash', { command: 'sleep 3; echo slept', timeout: 30 },
			{ onprogress: (p) => seen.push(p) }), 'done');
		check(r.stdout === 'slept\n', 'the command ran', r);
		note(`progress notifications: ${short(seen)}`);
		check(seen.length >= 2, 'at least 2 progress notifications for a 3 s command', seen.length);
		check(seen.every((p) => typeof p.progress === 'number'), 'each has a numeric progress', seen);
		check(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress), 'progress increases', seen);
		check(seen.every((p) => p.message === undefined || typeof p.message === 'string'), 'message text', seen);
		check(seen[seen.length - 1].progress <= 5, 'progress is seconds elapsed', seen);
		// Without a token: no progress (nothing to check but that it works).
		const r2 = bashIs('bash', await call(client, 'bash', { command: 'sleep 1.2; echo quiet' }), 'done');
		check(r2.stdout === 'quiet\n', 'a call without a progress token', r2);
	});
};

scenarios.paths = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const link = unique('link');
		bashIs('bash', await call(client, 'bash', { command: `ln -sfn /etc/passwd ${link}; ln -sfn /etc ${link}-dir` }), 'done');
		const attacks = [
			['read_file', { path: '/etc/passwd' }],
			['read_file', { path: '../x' }],
			['read_file', { path: '../../../../../../etc/passwd' }],
			['read_file', { path: '~/.ssh/id_rsa' }],
			['read_file', { path: 'file:///etc/passwd' }],
			['read_file', { path: link }],
			['read_file', { path: `${link}-dir/passwd` }],
			['write_file', { path: '/tmp/mcp-escape.txt', content: 'x' }],
			['write_file', { path: `../${unique('escape')}.txt`, content: 'x' }],
			['write_file', { path: link, content: 'x' }],
			['edit_file', { path: '/etc/passwd', old_string: 'root', new_string: 'toor' }],
			['edit_file', { path: link, old_string: 'root', new_string: 'toor' }],
		];
		for (const [tool, args] of attacks) {
			const res = await call(client, tool, args);
			const text = refused(tool, res, 'VALIDATION');
			note(`${tool} ${JSON.stringify(args)} -> ${short(text, 160)}`);
		}
		// Inside the root, not refused; a missing file is another category.
		const res = await call(client, 'read_file', { path: `${unique('missing')}.txt` });
		const text = refused('read_file', res);
		check(!text.startsWith('VALIDATION'), 'a missing file inside the root is not a VALIDATION error', text);
		bashIs('bash', await call(client, 'bash', { command: `rm -f ${link} ${link}-dir` }), 'done');
	});
};

// Arguments a tool does not accept: refused, and the server goes on.
scenarios['bad-arguments'] = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const cases = [
			['bash', {}],
			['bash', { command: 5 }],
			['read_file', {}],
			['write_file', { path: 'x.txt' }],
		];
		for (const [tool, args] of cases) {
			let outcome;
			try {
				const r = await call(client, tool, args);
				outcome = r.isError === true ? `isError: ${textOf(r)}` : `accepted: ${short(r)}`;
				check(r.isError === true, `${tool} ${JSON.stringify(args)} refused`, outcome);
			} catch (e) {
				outcome = `JSON-RPC error ${e.code}: ${e.message}`;
				check(e.code === -32602, `${tool} ${JSON.stringify(args)}: -32602`, outcome);
			}
			note(`${tool} ${JSON.stringify(args)} -> ${short(outcome, 160)}`);
		}
		let code;
		try { await call(client, 'no_such_tool', {}); } catch (e) { code = e.code; }
		check(code === -32602, 'an unknown tool: -32602', code);
		await client.ping();
	});
};

// The server as our own child process, no SDK: raw lines in and out.
function rawServer() {
	const child = spawn(serverCommand[0], serverCommand.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
	let buf = '';
	const lines = [];
	let waiters = [];
	child.stdout.on('data', (d) => {
		buf += d.toString();
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			if (line.trim() === '') continue;
			lines.push(line);
			waiters.forEach((w) => w());
		}
	});
	child.stderr.on('data', (d) => { stderrTail = (stderrTail + d.toString()).slice(-4000); });
	const exited = new Promise((res) => child.on('exit', (code, sig) => res({ code, sig })));
	const send = (s) => child.stdin.write(s + '\n');
	// next(what): the next line, parsed; fails after ms without one.
	const state = { read: 0 };
	const next = async (what, ms = 10000) => {
		const deadline = Date.now() + ms;
		for (;;) {
			while (state.read < lines.length) {
				const line = lines[state.read++];
				let msg;
				try { msg = JSON.parse(line); } catch { throw new Failure(`the server wrote a line that is not JSON: ${short(line)}`); }
				check(msg.jsonrpc === '2.0', 'every line is a JSON-RPC 2.0 message', line);
				return msg;
			}
			if (child.exitCode !== null || child.signalCode !== null) throw new Failure(`the server ended (${child.exitCode ?? child.signalCode}) before answering ${what}`);
			const left = deadline - Date.now();
			if (left <= 0) throw new Failure(`no answer to ${what} within ${ms} ms`);
			await new Promise((r) => { waiters = [r]; setTimeout(r, Math.min(left, 200)); });
		}
	};
	const initialize = async () => {
		send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: PROTOCOL_LATEST, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
		const m = await next('initialize');
		check(m.id === 1 && m.result && m.result.protocolVersion === PROTOCOL_LATEST, 'initialize answered', m);
		send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
	};
	const kill = () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); };
	return { child, lines, state, exited, send, next, initialize, kill };
}

// A cancellation on the wire: no answer for the cancelled request; a ping
// answered while the command runs; progress under a string token.
scenarios['cancel-raw'] = async () => {
	const srv = rawServer();
	const { send, next } = srv;
	try {
		await srv.initialize();
		const m0 = unique('rawcancel');
		send(JSON.stringify({ jsonrpc: '2.0', id: 20, method: 'tools/call',
			params: { name: 'bash', arguments: { command: `sleep 3; touch ${m0}` }, _meta: { progressToken: 'tok-20' } } }));
		let m = await next('progress for the running call');
		check(m.method === 'notifications/progress' && m.params.progressToken === 'tok-20', 'progress with the string token', m);
		send(JSON.stringify({ jsonrpc: '2.0', id: 21, method: 'ping' }));
		m = await next('a ping while the command runs');
		check(m.id === 21 && m.result, 'the ping is answered while the command runs', m);
		send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 20, reason: 'test' } }));
		send(JSON.stringify({ jsonrpc: '2.0', id: 22, method: 'tools/call',
			params: { name: 'bash', arguments: { command: 'sleep 3.5; echo after' } } }));
		for (;;) {
			m = await next('the call after the cancellation', 30000);
			check(m.id !== 20, 'no answer for the cancelled request', m);
			if (m.id === 22) break;
			check(m.method === 'notifications/progress', 'only progress before the next answer', m);
		}
		check(m.result && m.result.structuredContent.stdout === 'after\n', 'the next call ran', m);
		send(JSON.stringify({ jsonrpc: '2.0', id: 23, method: 'tools/call',
			params: { name: 'bash', arguments: { command: `test -e ${m0} && echo present || echo absent` } } }));
		m = await next('the marker check', 30000);
		check(m.id === 23 && m.result.structuredContent.stdout === 'absent\n', 'the cancelled command never made its file', m);
		srv.child.stdin.end();
		const ex = await Promise.race([srv.exited, sleep(15000).then(() => 'timeout')]);
		check(ex !== 'timeout' && ex.code === 0, 'EOF: exit 0', ex);
	} finally {
		srv.kill();
	}
};

// Raw bytes on the server's stdin.
scenarios.garbage = async () => {
	const srv = rawServer();
	const { child, send, next, lines, state, exited } = srv;
	// Each line is answered; a wrong answer is recorded and the next line
	// tried, so that one wrong code does not hide the rest.
	const wrong = [];
	const expectError = async (what, id, codes) => {
		const m = await next(what);
		try {
			check(m.error && codes.includes(m.error.code), `${what}: error ${codes.join(' or ')}`, m);
			check(m.id === id, `${what}: id ${JSON.stringify(id)}`, m);
			check(typeof m.error.message === 'string', `${what}: a message`, m);
		} catch (e) {
			if (!(e instanceof Failure)) throw e;
			wrong.push(e.message);
			note(`WRONG: ${e.message}`);
		}
		return m;
	};
	try {
		await srv.initialize();
		let m;
		send('this is not JSON');
		await expectError('a line that is not JSON', null, [-32700]);
		send('{"jsonrpc": "2.0", "id": 2, "method": "ping"');
		await expectError('truncated JSON', null, [-32700]);
		send('\u0000\u0001\u00ff garbage \u001b[0m');
		await expectError('control bytes', null, [-32700]);
		send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'no/such/method' }));
		await expectError('an unknown method', 3, [-32601]);
		send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: 5 }));
		await expectError('tools/call with params 5', 4, [-32602]);
		send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }));
		await expectError('tools/call of an unknown tool', 5, [-32602]);
		send(JSON.stringify({ jsonrpc: '1.0', id: 6, method: 'ping' }));
		await expectError('jsonrpc "1.0"', 6, [-32600]);
		send(JSON.stringify({ id: 7 }));
		await expectError('an object with no method', 7, [-32600]);
		// JSON, but no request: -32600 (JSON-RPC 2.0, section 5.1).
		for (const v of ['42', '"a string"', 'true', 'null', '[]', '[{"jsonrpc":"2.0","id":11,"method":"ping"}]']) {
			send(v);
			await expectError(`the JSON value ${v}`, null, [-32600]);
		}
		send(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'ping' }));
		m = await next('ping after the garbage');
		check(m.id === 8 && m.result && typeof m.result === 'object' && !m.error, 'a ping after the garbage is answered', m);
		send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'bash', arguments: { command: 'echo fine' } } }));
		m = await next('bash after the garbage', 30000);
		check(m.id === 9 && m.result && m.result.structuredContent && m.result.structuredContent.stdout === 'fine\n',
			'a tool call after the garbage works', m);
		// A notification the server does not know: no answer at all.
		send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/no_such' }));
		send(JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'ping' }));
		m = await next('ping after an unknown notification');
		check(m.id === 10 && m.result, 'an unknown notification gets no answer', m);
		child.stdin.end();
		const timer = sleep(15000).then(() => 'timeout');
		const ex = await Promise.race([exited, timer]);
		check(ex !== 'timeout', 'EOF on stdin ends the server (within 15 s)');
		check(ex.code === 0 && ex.sig === null, 'exit status 0 at EOF', ex);
		check(state.read === lines.length, 'nothing more written', lines.slice(state.read));
		check(wrong.length === 0, 'every line answered as JSON-RPC says', wrong.join('; '));
	} finally {
		srv.kill();
	}
};

// Requests sent at once, answered each under its own id.
scenarios.concurrent = async () => {
	await withClient(async (client) => {
		await listTools(client);
		const f = unique('conc') + '.txt';
		good('write_file', await call(client, 'write_file', { path: f, content: 'x\n' }));
		const rs = await Promise.all([
			client.ping(),
			call(client, 'read_file', { path: f }),
			client.listTools(),
			call(client, 'bash', { command: 'echo one' }),
		]);
		check(good('read_file', rs[1]).total_lines === 1, 'read_file among concurrent requests');
		check(rs[2].tools.length === TOOLS.length, 'tools/list among concurrent requests');
		check(good('bash', rs[3]).stdout === 'one\n', 'bash among concurrent requests');
	});
};

// ---------------------------------------------------------------------
// exec_command and write_stdin (`--tools codex`, `--tools all`)

scenarios['codex-list'] = async () => {
	for (const [set, names] of [['codex', CODEX_TOOLS], ['all', [...new Set([...TOOLS, ...CODEX_TOOLS])]]]) {
		await withTools(set, async (client) => {
			const tools = await listTools(client);
			const got = tools.map((t) => t.name).sort();
			check(JSON.stringify(got) === JSON.stringify([...names].sort()), `--tools ${set}: the ${names.length} tools`, got);
			for (const t of tools) {
				check(t.inputSchema && t.inputSchema.type === 'object' && t.outputSchema && t.outputSchema.type === 'object',
					`--tools ${set}: ${t.name}: input and output schemas of type object`);
				let compiled = true;
				try { ajv.compile(t.inputSchema); ajv.compile(t.outputSchema); } catch (e) { compiled = e.message; }
				check(compiled === true, `--tools ${set}: ${t.name}: both schemas compile (ajv)`, String(compiled));
			}
			const tool = (n) => tools.find((t) => t.name === n);
			check(JSON.stringify(tool('exec_command').inputSchema.required) === '["cmd"]', 'exec_command requires cmd');
			check(['cmd', 'workdir', 'tty', 'yield_time_ms', 'max_output_tokens'].every((k) => k in tool('exec_command').inputSchema.properties),
				"exec_command takes Codex's arguments", Object.keys(tool('exec_command').inputSchema.properties));
			check(JSON.stringify(tool('write_stdin').inputSchema.required) === '["session_id"]', 'write_stdin requires session_id');
			check(tool('write_stdin').inputSchema.properties.session_id.type === 'integer', 'session_id is an integer');
			check(['chars', 'yield_time_ms', 'max_output_tokens'].every((k) => k in tool('write_stdin').inputSchema.properties),
				"write_stdin takes Codex's arguments", Object.keys(tool('write_stdin').inputSchema.properties));
		});
	}
};

// A quick command: output and exit code, no session_id. One that outlives
// yield_time_ms: a session_id; write_stdin polls until its end. Ctrl-C.
// Unknown and ended session_ids.
scenarios['codex-exec'] = async () => {
	await withTools('codex', async (client) => {
		let r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'echo hello; echo oops >&2; false' }), 'done');
		check(r.stdout === 'hello\n' && r.stderr === 'oops\n' && r.exit_code === 1 && r.signal === null,
			'a quick command: its output and exit code, no session_id', r);
		check(Number.isInteger(r.wall_time_ms) && r.token_dropped_bytes === 0 && r.original_token_count === null,
			'wall_time_ms; nothing cut for max_output_tokens', r);
		// It waits for a file that the next command makes: it outlives any wait.
		const go = unique('go');
		let res = await call(client, 'exec_command', { cmd: `while [ ! -e ${go} ]; do sleep 0.05; done; echo late`, yield_time_ms: 300 });
		r = execIs('exec_command', res, 'running');
		const id = r.session_id;
		const last = textOf(res).split('\n').pop();
		check(last.includes(`session_id ${id}`) && last.includes('write_stdin'), 'the last line names the session_id and write_stdin', last);
		execIs('exec_command', await call(client, 'exec_command', { cmd: `touch ${go}` }), 'done');
		r = execIs('write_stdin', await call(client, 'write_stdin', { session_id: id, yield_time_ms: 30000 }), 'done');
		check(r.stdout === 'late\n' && r.exit_code === 0, 'write_stdin with empty chars polls: the rest of the output and the exit code', r);
		execIs('exec_command', await call(client, 'exec_command', { cmd: `rm -f ${go}` }), 'done');
		let text = refused('write_stdin', await call(client, 'write_stdin', { session_id: id }), 'EXECUTION');
		check(text.startsWith('EXECUTION UNKNOWN_SESSION: ') && text.includes(`session_id ${id} has ended`),
			'a session_id whose end was reported is unknown, and the error says why', text);
		text = refused('write_stdin', await call(client, 'write_stdin', { session_id: 999999, chars: 'x\n' }), 'EXECUTION');
		check(text.startsWith('EXECUTION UNKNOWN_SESSION: ') && text.includes('no session_id 999999'),
			'a session_id never given is a clear error', text);
		// Ctrl-C as chars: the command is interrupted. Once it has begun:
		// toolrund's session loses an interrupt that comes before.
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'echo started; sleep 600', yield_time_ms: 1000 }), 'running');
		for (let seen = r.stdout, i = 0; !seen.includes('started'); i++) {
			check(i < 12, 'the command begins (polled)', seen);
			seen += execIs('write_stdin', await call(client, 'write_stdin', { session_id: r.session_id }), 'running').stdout;
		}
		r = execIs('write_stdin', await call(client, 'write_stdin', { session_id: r.session_id, chars: '\u0003', yield_time_ms: 30000 }), 'done');
		check(r.exit_code === 130 || r.signal === 'SIGINT', 'chars "\\u0003" interrupts it', r);
		// Each command in a fresh shell: nothing carries over.
		execIs('exec_command', await call(client, 'exec_command', { cmd: 'export CARRY=over; cd /' }), 'done');
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'echo "[${CARRY-}]"' }), 'done');
		check(r.stdout === '[]\n', 'a variable does not carry over to the next exec_command', r);
		// Arguments it does not accept.
		refused('exec_command', await call(client, 'exec_command', {}), 'SYNTAX');
		refused('exec_command', await call(client, 'exec_command', { cmd: 'true', max_output_tokens: 0 }), 'SYNTAX');
		refused('write_stdin', await call(client, 'write_stdin', {}), 'SYNTAX');
		refused('write_stdin', await call(client, 'write_stdin', { session_id: '1' }), 'SYNTAX');
	});
};

// A prompt: waiting_input at once (the wait would be 30 s otherwise);
// write_stdin with "y\n" finishes it.
scenarios['codex-prompt'] = async () => {
	await withTools('codex', async (client) => {
		const res = await call(client, 'exec_command', { cmd: 'printf "Continue? "; read x; echo "got $x"', yield_time_ms: 30000 });
		let r = execIs('exec_command', res, 'waiting_input');
		check(r.stdout === 'Continue? ', 'the prompt so far', r);
		const last = textOf(res).split('\n').pop();
		check(last.includes('waiting for input') && last.includes(`session_id ${r.session_id}`), 'the last line says it waits for input', last);
		r = execIs('write_stdin', await call(client, 'write_stdin', { session_id: r.session_id, chars: 'y\n', yield_time_ms: 30000 }), 'done');
		check(r.stdout === 'got y\n' && r.exit_code === 0, 'write_stdin "y\\n" answers it and the command ends', r);
	});
};

// Output over the budget: toolrund's cut fields and its spill file, whole
// and readable; max_output_tokens lowers what the result shows, its
// marker naming where what it left out is: the server's own file when
// toolrund kept nothing (removed when the server ends), toolrund's spill
// file when it did.
scenarios['codex-cut'] = async () => {
	let ownSpill;
	await withTools('codex', async (client) => {
		let res = await call(client, 'exec_command', { cmd: 'seq 1 100000' });
		let r = execIs('exec_command', res, 'done');
		check(r.exit_code === 0 && r.stdout_dropped_lines > 0 && r.stdout_dropped_bytes > 0 && typeof r.stdout_spill === 'string',
			'the cut fields: dropped lines and bytes, the spill file', r);
		check(r.token_dropped_bytes === 0 && r.stdout_token_spill === null && r.stderr_token_spill === null,
			'without max_output_tokens nothing more is cut', r);
		const marker = /\.\.\.\[toolrun cut \d+ lines \(\d+ bytes\) of stdout here: (lines \d+-\d+ of 100000);/.exec(r.stdout);
		check(marker !== null, "toolrund's marker in stdout", short(r.stdout));
		let last = textOf(res).split('\n').pop();
		check(last === `[cut: stdout ${marker[1]} (at the marker above); the whole stdout is in ${r.stdout_spill}]`,
			'the last line repeats the cut and names the spill file', last);
		const spill = r.stdout_spill;
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: `wc -l < '${spill}'; tail -n 1 '${spill}'` }), 'done');
		check(r.stdout === '100000\n100000\n', 'the spill file is readable and whole', r);

		// Under toolrund's budget: only max_output_tokens cuts (50 tokens,
		// 200 bytes), and the server keeps the result's stdout.
		res = await call(client, 'exec_command', { cmd: 'seq 1 150', max_output_tokens: 50 });
		r = execIs('exec_command', res, 'done');
		check(r.stdout_dropped_bytes === 0 && r.stdout_spill === null && r.token_dropped_bytes > 0 &&
			r.original_token_count === Math.ceil(492 / 4), 'max_output_tokens cuts under the budget: token_dropped_bytes, original_token_count', r);
		ownSpill = r.stdout_token_spill;
		check(typeof ownSpill === 'string' && ownSpill.startsWith('/') && r.stderr_token_spill === null,
			'stdout_token_spill names the file that keeps it', r);
		const lines = r.stdout.split('\n');
		const m = lines.find((l) => l.startsWith('...[max_output_tokens'));
		check(m === `...[max_output_tokens left out ${r.token_dropped_bytes} bytes of stdout here: ` +
			`bytes ${m && /bytes (\d+)-/.exec(m)[1]}-${m && /-(\d+) of the/.exec(m)[1]} of the 492 in this result; ` +
			`the whole stdout of this result is in ${ownSpill}]`, 'the marker says what was left out and where the whole is', m);
		check(r.stdout.startsWith('1\n2\n') && r.stdout.endsWith('149\n150\n'), 'its head and tail kept around the marker', r.stdout);
		check(r.stdout.length - m.length - 1 <= 200, '50 tokens: at most 200 bytes of output besides the marker', r.stdout);
		last = textOf(res).split('\n').pop();
		check(/^\[cut: stdout bytes \d+-\d+ of the 492 in this result, for max_output_tokens \(at the marker above\); the whole stdout of this result is in /.test(last) &&
			last.endsWith(`${ownSpill}]`), 'the last line says what max_output_tokens left out and where it is', last);
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: `seq 1 150 | cmp - '${ownSpill}' && echo same` }), 'done');
		check(r.stdout === 'same\n', "the server's file holds the result's stdout whole", r);

		// Over toolrund's budget too: its spill file holds the whole stream.
		res = await call(client, 'exec_command', { cmd: 'seq 1 100000', max_output_tokens: 30 });
		r = execIs('exec_command', res, 'done');
		check(r.stdout_dropped_bytes > 0 && r.token_dropped_bytes > 0 && r.stdout_token_spill === r.stdout_spill,
			"cut twice: what max_output_tokens left out is in toolrund's spill file", r);
		check(r.stdout.includes(`; the whole stdout is in ${r.stdout_spill}]\n`), "the marker names toolrund's spill file", r.stdout);
		note(`cut twice: ${short(textOf(res).split('\n').pop(), 400)}`);
	});
	// Asked of a new server, as the file is where the server runs (a box).
	await withTools('codex', async (client) => {
		const r = execIs('exec_command', await call(client, 'exec_command', { cmd: `test ! -e '${ownSpill}' && echo gone` }), 'done');
		check(r.stdout === 'gone\n', "the server's own file is removed when it ends", ownSpill);
	});
};

// tty=true: a terminal; a prompt on it answered by write_stdin.
scenarios['codex-tty'] = async () => {
	await withTools('codex', async (client) => {
		let r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'tty; test -t 0 && test -t 1 && echo on-a-terminal', tty: true }), 'done');
		check(r.tty === true && /^\/dev\/pts\/\d+\r\non-a-terminal\r\n$/.test(r.stdout) && r.exit_code === 0,
			'tty=true: stdin and stdout are a terminal (its \\r\\n line ends)', r);
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'tty' }), 'done');
		check(r.tty === false && r.stdout === 'not a tty\n' && r.exit_code === 1, 'without tty: no terminal', r);
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'read -p "name? " n; echo "hi $n"', tty: true, yield_time_ms: 30000 }), 'waiting_input');
		check(r.stdout === 'name? ', 'read -p prompts on the terminal', r);
		r = execIs('write_stdin', await call(client, 'write_stdin', { session_id: r.session_id, chars: 'bob\n', yield_time_ms: 30000 }), 'done');
		check(r.stdout === 'bob\r\nhi bob\r\n', 'the input echoed, then the answer', r);
	});
};

// workdir: under the root, as a file tool's path; outside it refused.
scenarios['codex-workdir'] = async () => {
	await withTools('codex', async (client) => {
		const dir = unique('wd');
		let r = execIs('exec_command', await call(client, 'exec_command', { cmd: `mkdir -p ${dir}/sub; pwd` }), 'done');
		const root = r.stdout.trim();
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'pwd', workdir: `${dir}/sub` }), 'done');
		check(r.stdout === `${root}/${dir}/sub\n`, 'a relative workdir is under the root', r);
		r = execIs('exec_command', await call(client, 'exec_command', { cmd: 'pwd', workdir: `${root}/${dir}` }), 'done');
		check(r.stdout === `${root}/${dir}\n`, 'an absolute workdir under the root', r);
		for (const workdir of ['/etc', '..', `${dir}/../../..`]) {
			const text = refused('exec_command', await call(client, 'exec_command', { cmd: 'pwd', workdir }), 'VALIDATION');
			note(`workdir ${workdir} -> ${short(text, 160)}`);
		}
		refused('exec_command', await call(client, 'exec_command', { cmd: 'pwd', workdir: `${dir}/missing` }), 'EXECUTION');
		execIs('exec_command', await call(client, 'exec_command', { cmd: `rm -r ${dir}` }), 'done');
	});
};

const ORDER = ['initialize', 'tools-list', 'tools-each', 'session', 'large-output', 'cancel', 'cancel-raw',
	'cancel-other-session', 'pipelined', 'kill',
	'progress', 'paths', 'bad-arguments', 'garbage', 'concurrent',
	'codex-list', 'codex-exec', 'codex-prompt', 'codex-cut', 'codex-tty', 'codex-workdir'];

// ---------------------------------------------------------------------

async function main() {
	const argv = process.argv.slice(2);
	let chosen = null;
	let i = 0;
	for (; i < argv.length; i++) {
		const a = argv[i];
		if (a === '--') { i++; break; }
		if (a === '--list') { console.log(ORDER.join('\n')); return 0; }
		if (a === '--scenario' && i + 1 < argv.length) { chosen = argv[++i].split(','); continue; }
		console.error(`client.mjs: unknown argument ${a}\nusage: node client.mjs [--scenario NAME[,NAME...]] [--list] -- COMMAND [ARGS...]`);
		return 2;
	}
	serverCommand = argv.slice(i);
	if (serverCommand.length === 0) {
		console.error('client.mjs: no server command after --');
		return 2;
	}
	const names = chosen && !chosen.includes('all') ? chosen : ORDER;
	for (const n of names) {
		if (!scenarios[n]) { console.error(`client.mjs: no scenario ${n} (--list)`); return 2; }
	}
	console.log('TAP version 13');
	console.log(`1..${names.length}`);
	let failed = 0;
	for (const [k, n] of names.entries()) {
		checks = [];
		stderrTail = '';
		const t0 = Date.now();
		let err = null;
		try {
			await scenarios[n]();
		} catch (e) {
			err = e;
		}
		const ms = Date.now() - t0;
		if (err) {
			failed++;
			console.log(`not ok ${k + 1} - ${n} (${ms} ms)`);
			for (const c of checks.slice(-12)) console.log(`# ${c}`);
			console.log(`# FAIL: ${err instanceof Failure ? err.message : err.stack || err}`);
			if (stderrTail) for (const l of stderrTail.split('\n')) console.log(`# server stderr: ${l}`);
		} else {
			console.log(`ok ${k + 1} - ${n} (${ms} ms, ${checks.length} checks)`);
			for (const c of checks) if (!c.startsWith('ok: ')) console.log(`# ${c}`);
		}
	}
	console.log(`# ${names.length - failed} passed, ${failed} failed`);
	return failed ? 1 : 0;
}

process.exitCode = await main();
