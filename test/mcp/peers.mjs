#!/usr/bin/env node
// The peer benchmark's client (bench/mcp-peers.sh runs it): one script of
// agent calls through toolrun's MCP server and through Desktop Commander's,
// both spawned as given (in practice `docker exec -i BOX ...`, the same
// box), interleaved call by call; then what each returns for a large
// output, a long command and a command waiting for input.
//
//   node peers.mjs --root DIR --out FILE.json [--rounds N]
//        --toolrun '["docker","exec","-i","BOX","toolrun","mcp",...]'
//        --peer '["docker","exec","-i","BOX","/tmp/peer/node",...]'
//
// DIR is the directory both servers work in (the box's /workspace); the
// script makes and removes its own subdirectory there. Prints a summary;
// the JSON holds every figure. Exit 1 if a toolrun call failed or
// returned what was not expected (the peer's misses are reported only).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { writeFileSync } from 'node:fs';
import os from 'node:os';

const args = process.argv.slice(2);
const opt = {};
for (let i = 0; i < args.length; i += 2) opt[args[i].replace(/^--/, '')] = args[i + 1];
for (const k of ['root', 'out', 'toolrun', 'peer']) {
	if (!opt[k]) { console.error(`peers.mjs: --${k} is required`); process.exit(2); }
}
const ROOT = opt.root.replace(/\/$/, '');
const ROUNDS = Number(opt.rounds || 3);
const DIR = `mcp-bench-${process.pid}`;
const ABS = `${ROOT}/${DIR}`;

let problems = [];

async function connect(name, cmd) {
	const [command, ...rest] = JSON.parse(cmd);
	const t = new StdioClientTransport({ command, args: rest, env: { ...process.env }, stderr: 'pipe' });
	let err = '';
	t.stderr?.on('data', (d) => { err = (err + d).slice(-2000); });
	const c = new Client({ name: 'toolrun-mcp-peers', version: '1.0.0' }, { capabilities: {} });
	await c.connect(t);
	const { tools } = await c.listTools();
	return { name, client: c, info: c.getServerVersion(), protocol: t._protocolVersion, tools: tools.map((x) => x.name), stderr: () => err };
}

function textOf(r) {
	return (r.content || []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

async function timed(peer, tool, a, timeoutMs = 120000) {
	const t0 = process.hrtime.bigint();
	let r;
	let error = null;
	try {
		r = await peer.client.callTool({ name: tool, arguments: a }, undefined, { timeout: timeoutMs });
	} catch (e) {
		error = `${e.code ?? ''} ${e.message}`;
		r = { isError: true, content: [{ type: 'text', text: error }] };
	}
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	return { ms, r, text: textOf(r), error };
}

// The script: abstract operations, each peer's way.
const data = Array.from({ length: 100 }, (_, i) => `line ${i + 1} of the data file`).join('\n') + '\n';
const OPS = [
	{ op: 'sh', label: 'echo', cmd: 'echo hello', expect: 'hello' },
	{ op: 'sh', label: 'ls', cmd: `ls ${DIR}`, expect: 'data.txt' },
	{ op: 'sh', label: 'cat', cmd: `cat ${DIR}/data.txt`, expect: 'line 100 of the data file' },
	{ op: 'sh', label: 'pipeline', cmd: `cat ${DIR}/data.txt | grep 7 | sort | wc -l`, expect: '19' },
	{ op: 'read', label: 'read_file', path: 'data.txt', expect: 'line 42 of the data file' },
	{ op: 'write', label: 'write_file', path: 'note.txt', content: 'a note\n', expect: null },
	{ op: 'sh', label: 'pwd', cmd: 'pwd', expect: ROOT },
	{ op: 'sh', label: 'ls | head', cmd: `ls -la ${DIR} | head -n 5`, expect: 'total' },
	{ op: 'read', label: 'read_file (small)', path: 'note.txt', expect: 'a note' },
	{ op: 'sh', label: 'wc', cmd: `wc -l ${DIR}/data.txt`, expect: '100' },
];
const SCRIPT = Array.from({ length: 50 }, (_, i) => OPS[i % OPS.length]);

const ways = {
	toolrun: {
		sh: (o) => ['bash', { command: o.cmd, timeout: 30 }],
		read: (o) => ['read_file', { path: `${DIR}/${o.path}` }],
		write: (o) => ['write_file', { path: `${DIR}/${o.path}`, content: o.content }],
	},
	peer: {
		sh: (o) => ['start_process', { command: `cd ${ROOT} && ${o.cmd}`, timeout_ms: 30000, shell: '/bin/bash' }],
		read: (o) => ['read_file', { path: `${ABS}/${o.path}` }],
		write: (o) => ['write_file', { path: `${ABS}/${o.path}`, content: o.content, mode: 'rewrite' }],
	},
};

function stats(xs) {
	const s = [...xs].sort((a, b) => a - b);
	const q = (p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
	const r = (v) => Math.round(v * 100) / 100;
	return { n: s.length, median: r(q(0.5)), p90: r(q(0.9)), min: r(s[0]), max: r(s[s.length - 1]), mean: r(s.reduce((a, b) => a + b, 0) / s.length) };
}

function clip(s, n = 1200) {
	return s.length > n ? `${s.slice(0, n / 2)}\n[... ${s.length - n} characters not shown ...]\n${s.slice(-n / 2)}` : s;
}

function structuredSummary(r) {
	if (!r.structuredContent) return null;
	const s = { ...r.structuredContent };
	for (const k of ['stdout', 'stderr', 'text']) {
		if (typeof s[k] === 'string') { s[`${k}_chars`] = s[k].length; s[k] = clip(s[k], 400); }
	}
	return s;
}

function record(step, x) {
	return {
		step,
		ms: Math.round(x.ms * 100) / 100,
		is_error: x.r.isError === true,
		text_chars: x.text.length,
		text_lines: x.text.split('\n').length,
		text: clip(x.text),
		structured: structuredSummary(x.r),
	};
}

function dcPid(text) {
	const m = /PID[:\s]+(\d+)/i.exec(text);
	return m ? Number(m[1]) : null;
}

async function main() {
	const t = await connect('toolrun', opt.toolrun);
	const p = await connect('peer', opt.peer);
	const peers = { toolrun: t, peer: p };
	console.log(`toolrun: ${JSON.stringify(t.info)}; peer: ${JSON.stringify(p.info)}`);

	// Set-up, not timed: the directory and the data file.
	await timed(t, 'bash', { command: `rm -rf ${DIR} && mkdir -p ${DIR}` });
	const w = await timed(t, 'write_file', { path: `${DIR}/data.txt`, content: data });
	if (w.r.isError) throw new Error(`set-up failed: ${w.text}`);
	await timed(p, 'get_config', {});
	// Warm-up: one of each operation on each side.
	for (const o of OPS) {
		for (const k of ['toolrun', 'peer']) {
			const [tool, a] = ways[k][o.op](o);
			await timed(peers[k], tool, a);
		}
	}

	const lat = { toolrun: [], peer: [] };
	const perOp = { toolrun: {}, peer: {} };
	for (let round = 0; round < ROUNDS; round++) {
		for (const [i, o] of SCRIPT.entries()) {
			// Alternate who goes first, so that drift cancels out.
			const order = (round * SCRIPT.length + i) % 2 === 0 ? ['toolrun', 'peer'] : ['peer', 'toolrun'];
			for (const k of order) {
				const [tool, a] = ways[k][o.op](o);
				const x = await timed(peers[k], tool, a);
				lat[k].push(x.ms);
				(perOp[k][o.label] ||= []).push(x.ms);
				const bad = x.r.isError || (o.expect !== null && !x.text.includes(o.expect) &&
					!(x.r.structuredContent && JSON.stringify(x.r.structuredContent).includes(o.expect)));
				if (bad) problems.push({ peer: k, call: i, op: o.label, tool, args: a, got: clip(x.text, 400) });
			}
		}
	}
	const latency = {};
	for (const k of ['toolrun', 'peer']) {
		latency[k] = { ...stats(lat[k]), per_op_median: Object.fromEntries(Object.entries(perOp[k]).map(([n, v]) => [n, stats(v).median])) };
	}
	latency.ratio_median_peer_over_toolrun = Math.round((latency.peer.median / latency.toolrun.median) * 1000) / 1000;
	latency.ratio_p90_peer_over_toolrun = Math.round((latency.peer.p90 / latency.toolrun.p90) * 1000) / 1000;

	// The three cases.
	const cases = { large_output: {}, long_command: {}, waiting_input: {} };
	// (a) seq 1 200000
	cases.large_output.toolrun = [record('bash {command: "seq 1 200000"}', await timed(t, 'bash', { command: 'seq 1 200000', timeout: 60 }))];
	{
		const x = await timed(p, 'start_process', { command: 'seq 1 200000', timeout_ms: 60000, shell: '/bin/bash' });
		const steps = [record('start_process {command: "seq 1 200000", timeout_ms: 60000}', x)];
		const pid = dcPid(x.text);
		if (pid) steps.push(record(`read_process_output {pid: ${pid}}`, await timed(p, 'read_process_output', { pid, timeout_ms: 5000 })));
		cases.large_output.peer = steps;
	}
	// (b) sleep 40 with a short timeout (2 s)
	{
		const a = await timed(t, 'bash', { command: 'sleep 40; echo woke', timeout: 2 });
		const b = await timed(t, 'bash_output', { timeout: 1 });
		const c = await timed(t, 'bash_interrupt', {});
		const d = await timed(t, 'bash', { command: 'echo next' });
		cases.long_command.toolrun = [record('bash {command: "sleep 40; echo woke", timeout: 2}', a),
			record('bash_output {timeout: 1}', b), record('bash_interrupt {}', c), record('bash {command: "echo next"}', d)];
	}
	{
		const a = await timed(p, 'start_process', { command: 'sleep 40; echo woke', timeout_ms: 2000, shell: '/bin/bash' });
		const steps = [record('start_process {command: "sleep 40; echo woke", timeout_ms: 2000}', a)];
		const pid = dcPid(a.text);
		if (pid) {
			steps.push(record(`read_process_output {pid: ${pid}, timeout_ms: 1000}`, await timed(p, 'read_process_output', { pid, timeout_ms: 1000 })));
			steps.push(record(`force_terminate {pid: ${pid}}`, await timed(p, 'force_terminate', { pid })));
		}
		steps.push(record('start_process {command: "echo next"}', await timed(p, 'start_process', { command: 'echo next', timeout_ms: 5000, shell: '/bin/bash' })));
		cases.long_command.peer = steps;
	}
	// (c) a command waiting for input
	{
		const a = await timed(t, 'bash', { command: 'read x; echo got $x', timeout: 5 });
		const b = await timed(t, 'bash_input', { text: 'hello', timeout: 5 });
		cases.waiting_input.toolrun = [record('bash {command: "read x; echo got $x", timeout: 5}', a), record('bash_input {text: "hello"}', b)];
		if (!b.text.includes('got hello')) problems.push({ peer: 'toolrun', case: 'waiting_input', got: clip(b.text, 400) });
	}
	{
		const a = await timed(p, 'start_process', { command: 'read x; echo got $x', timeout_ms: 5000, shell: '/bin/bash' });
		const steps = [record('start_process {command: "read x; echo got $x", timeout_ms: 5000}', a)];
		const pid = dcPid(a.text);
		if (pid) {
			steps.push(record(`interact_with_process {pid: ${pid}, input: "hello", timeout_ms: 5000}`,
				await timed(p, 'interact_with_process', { pid, input: 'hello', timeout_ms: 5000 })));
			steps.push(record(`read_process_output {pid: ${pid}, timeout_ms: 2000}`, await timed(p, 'read_process_output', { pid, timeout_ms: 2000 })));
			await timed(p, 'force_terminate', { pid });
		}
		cases.waiting_input.peer = steps;
	}

	await timed(t, 'bash', { command: `rm -rf ${DIR}` });
	const result = {
		date: new Date().toISOString(),
		machine: { host_cpus: os.cpus().length, load_average: os.loadavg().map((v) => Math.round(v * 100) / 100), kernel: os.release(), node: process.version },
		servers: { toolrun: { info: t.info, tools: t.tools }, peer: { info: p.info, tools: p.tools } },
		commands: { toolrun: JSON.parse(opt.toolrun), peer: JSON.parse(opt.peer) },
		rounds: ROUNDS,
		script: SCRIPT.map((o) => o.label),
		latency_ms: latency,
		cases,
		problems,
	};
	writeFileSync(opt.out, JSON.stringify(result, null, 2) + '\n');

	const L = latency;
	const lines = [];
	lines.push(`${result.date}: ${ROUNDS} x ${SCRIPT.length} calls each, interleaved, load average ${result.machine.load_average.join(' ')}`);
	lines.push(`toolrun ${t.info.version}: median ${L.toolrun.median} ms, p90 ${L.toolrun.p90} ms (min ${L.toolrun.min}, max ${L.toolrun.max})`);
	lines.push(`${p.info.name} ${p.info.version}: median ${L.peer.median} ms, p90 ${L.peer.p90} ms (min ${L.peer.min}, max ${L.peer.max})`);
	lines.push(`ratio peer/toolrun: median ${L.ratio_median_peer_over_toolrun}, p90 ${L.ratio_p90_peer_over_toolrun}`);
	lines.push('per operation, median ms (toolrun / peer):');
	for (const o of OPS) lines.push(`  ${o.label.padEnd(18)} ${L.toolrun.per_op_median[o.label]} / ${L.peer.per_op_median[o.label]}`);
	for (const [c, v] of Object.entries(cases)) {
		for (const k of ['toolrun', 'peer']) {
			const first = v[k][0];
			const s = first.structured;
			const extra = s ? ` state=${s.state} exit=${s.exit_code} stdout_chars=${s.stdout_chars} dropped_lines=${s.stdout_dropped_lines} spill=${s.stdout_spill}` : '';
			lines.push(`${c} ${k}: ${v[k].map((x) => `${x.step.split(' ')[0]} ${x.ms} ms, ${x.text_chars} chars${x.is_error ? ' (error)' : ''}`).join('; ')}${extra}`);
		}
	}
	for (const k of ['toolrun', 'peer']) {
		const mine = problems.filter((x) => x.peer === k);
		if (mine.length) lines.push(`${k}: ${mine.length} calls did not return what was expected (see "problems" in the JSON): ${[...new Set(mine.map((x) => x.op || x.case))].join(', ')}`);
	}
	const summary = lines.join('\n') + '\n';
	writeFileSync(opt.out.replace(/\.json$/, '') + '.txt', summary);
	process.stdout.write(summary);
	await t.client.close();
	await p.client.close();
	// toolrun's misses fail the run; the peer's are its own, reported.
	return problems.some((x) => x.peer === 'toolrun') ? 1 : 0;
}

process.exitCode = await main().catch((e) => { console.error(`peers.mjs: ${e.stack || e}`); return 1; });
