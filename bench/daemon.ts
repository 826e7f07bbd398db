/**
 * 8. The daemon (`serve --stdio --shared`, docs/daemon.md).
 *
 * a) Sharing: 5 sessions × 10 servers. Each session is an SDK client that
 *    starts `serve --stdio --shared` (the first one starts the daemon), lists
 *    and calls `pid` on every server. Counted: live server processes (target
 *    10) and the total RSS of every process the sessions caused (shims,
 *    daemon, servers) against 5 plain `serve --stdio` sessions over the same
 *    config (50 server processes): the RSS ratio.
 * b) Added latency per call: one session through the shim and the daemon's
 *    socket against one plain `serve --stdio`, the same `echo` tool called in
 *    interleaved blocks of 100 (1 000 calls each). Target: p50 added ≤ 0.5 ms.
 *    Beside it, the CPU time per call of the processes on each path (shim and
 *    daemon; the plain serve), from /proc: on a loaded machine wall-clock
 *    latency is mostly waiting for a core, CPU time is the work done.
 * c) A new session's first complete `tools/list` with a warm daemon (its 10
 *    servers running for another session): from connecting to the socket to
 *    the list's answer (hello, initialize, tools/list; target ≤ 50 ms), and,
 *    for information, end to end from spawning a new shim process.
 *
 * Every process carries the bench markers (the daemon inherits them from the
 * shim that starts it; the servers get them through their config `env`).
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, mb, type BenchContext, type MeasurementResult, type Row } from './support/context.js';
import { cpuTimeMs, markedPids, markerEnv, plainNodeEnv, WORKER_MARKER, rssOf } from './support/proc.js';
import { FIXTURE, loadSdk, serverNames } from './support/servers.js';
import { CLI, LATENCY, pathStats, timeInterleaved } from './support/latency.js';
import { median, ratio } from './support/stats.js';
import { runAsWorker } from './support/worker.js';
import { buildIdentity, daemonDir, daemonPaths } from '../src/daemon/paths.js';
import { connectSocket, greet } from '../src/daemon/client.js';
import { DAEMON_PROTOCOL } from '../src/daemon/protocol.js';
import { defaultInputsPath } from '../src/config/input-store.js';

const SCRIPT = fileURLToPath(import.meta.url);
const PACKAGE = fileURLToPath(new URL('../../package.json', import.meta.url));
const FIRST_LISTS = 10;

interface Params {
  dir: string;
  servers: number;
  sessions: number;
}

interface Sample {
  shared: { serverProcesses: number; distinctPids: number; rssBytes: number; processes: number };
  plain: { serverProcesses: number; distinctPids: number; rssBytes: number; processes: number };
  latency: { stdio: { p50: number; p99: number }; shared: { p50: number; p99: number } };
  /** CPU time per call in µs: the plain serve; the shim and the daemon. */
  cpuPerCall: { stdio: number; shim: number; daemon: number };
  /** ms, one per new session. */
  firstListSocket: number[];
  firstListSpawn: number[];
}

/** Environment of the clients' processes: ours (markers included), without what skews Node start-up. */
function childEnv(dir: string): Record<string, string> {
  // Its own daemon: a private runtime directory in the bench's temp dir.
  return { ...plainNodeEnv(), HOME: dir, XDG_RUNTIME_DIR: join(dir, 'run'), MCP_RECONCILER_DAEMON_IDLE_TIMEOUT: '600000' };
}

function ownProcesses(): number[] {
  const worker = process.env[WORKER_MARKER];
  return worker ? markedPids(WORKER_MARKER, worker) : [];
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}


function census(): { serverProcesses: number; rssBytes: number; processes: number } {
  const pids = ownProcesses();
  return { serverProcesses: pids.filter((p) => cmdline(p).includes('basic-server')).length, rssBytes: pids.reduce((n, p) => n + rssOf(p), 0), processes: pids.length };
}

runAsWorker<Params, Sample>(import.meta.url, async (p) => {
  const { Client, StdioClientTransport } = await loadSdk();
  const env = childEnv(p.dir);
  mkdirSync(env.XDG_RUNTIME_DIR!, { recursive: true, mode: 0o700 });
  const names = serverNames(p.servers);
  const user = join(p.dir, 'daemon-bench.json');
  const approvals = join(p.dir, 'daemon-bench-approvals.json');
  writeFileSync(user, `${JSON.stringify({ mcpServers: Object.fromEntries(names.map((s) => [s, { command: process.execPath, args: [FIXTURE], env: { TOOLS_VERSION: '1', ...markerEnv() } }])) })}\n`);
  const single = join(p.dir, 'daemon-bench-single.json');
  writeFileSync(single, `${JSON.stringify({ mcpServers: { s01: { command: process.execPath, args: [FIXTURE], env: { TOOLS_VERSION: '1', ...markerEnv() } } } })}\n`);
  const globalArgs = (config: string): string[] => ['--cwd', p.dir, '--user-config', config, '--approvals', approvals];
  const pidOf = new WeakMap<object, number>();
  const open = async (config: string, shared: boolean): Promise<InstanceType<typeof Client>> => {
    const client = new Client({ name: 'bench-daemon', version: '1.0.0' });
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'serve', '--stdio', ...(shared ? ['--shared'] : []), ...globalArgs(config)], env, stderr: 'ignore' });
    await client.connect(transport);
    if (transport.pid !== null) pidOf.set(client, transport.pid);
    return client;
  };
  const useAll = async (client: InstanceType<typeof Client>, pids: Set<string>): Promise<void> => {
    await client.listTools();
    for (const name of names) {
      const r = (await client.callTool({ name: `mcp__${name}__pid`, arguments: {} })) as { content: Array<{ text?: string }> };
      pids.add(r.content[0]?.text ?? '?');
    }
  };
  const stopDaemon = async (): Promise<void> => {
    const { execFileSync } = await import('node:child_process');
    execFileSync(process.execPath, [CLI, 'daemon', '--stop'], { env, stdio: 'ignore' });
    for (let i = 0; i < 200 && ownProcesses().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  };

  // a) sharing, and the plain baseline
  const measure = async (shared: boolean): Promise<Sample['shared']> => {
    const clients: InstanceType<typeof Client>[] = [];
    const pids = new Set<string>();
    try {
      for (let i = 0; i < p.sessions; i++) clients.push(await open(user, shared));
      await Promise.all(clients.map((c) => useAll(c, pids)));
      await new Promise((r) => setTimeout(r, 500));
      return { ...census(), distinctPids: pids.size };
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      if (shared) await stopDaemon();
      for (let i = 0; i < 200 && ownProcesses().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    }
  };
  const shared = await measure(true);
  const plain = await measure(false);

  // b) latency: through the shim and the daemon vs a plain serve --stdio
  const viaShared = await open(single, true);
  const viaStdio = await open(single, false);
  const daemonPid = ownProcesses().find((p) => cmdline(p).includes('\0daemon'));
  const cpuPids = { shared: [pidOf.get(viaShared), daemonPid], stdio: [pidOf.get(viaStdio)] };
  const cpu = { shim: 0, daemon: 0, stdio: 0 };
  const paths = {
    shared: () => viaShared.callTool({ name: 'mcp__s01__echo', arguments: { text: 'ping' } }),
    stdio: () => viaStdio.callTool({ name: 'mcp__s01__echo', arguments: { text: 'ping' } }),
  };
  const samples = await timeInterleaved(paths, LATENCY.calls, async (key, block) => {
    const before = cpuPids[key].map((p) => (p === undefined ? 0 : cpuTimeMs(p)));
    await block();
    const used = cpuPids[key].map((p, i) => (p === undefined ? 0 : cpuTimeMs(p)) - before[i]!);
    if (key === 'stdio') cpu.stdio += used[0]!;
    else {
      cpu.shim += used[0]!;
      cpu.daemon += used[1]!;
    }
  });
  await viaShared.close();
  await viaStdio.close();

  // c) a new session's first tools/list with a warm daemon (its servers running for another session)
  const warm = await open(user, true);
  await warm.listTools();
  const pkg = JSON.parse(readFileSync(PACKAGE, 'utf8')) as { version: string };
  const build = buildIdentity(CLI, pkg.version);
  const socketPath = daemonPaths(daemonDir(env), build.id).socket;
  const request = {
    values: { stdio: true, cwd: p.dir, 'user-config': user, approvals },
    cwd: p.dir,
    env,
    global: { root: p.dir, preset: 'default', configFiles: [], userConfig: user, approvalsPath: approvals, inputsPath: defaultInputsPath(env), json: false, home: p.dir },
  };
  const firstListSocket: number[] = [];
  for (let i = 0; i < FIRST_LISTS; i++) {
    const t0 = performance.now();
    const socket = await connectSocket(socketPath);
    await greet(socket, { protocol: DAEMON_PROTOCOL, build: build.id, kind: 'session', pid: process.pid, session: request });
    socket.resume();
    let buf = '';
    const answer = (id: number): Promise<Record<string, unknown>> =>
      new Promise((resolve) => {
        const onData = (chunk: Buffer): void => {
          buf += chunk.toString('utf8');
          for (const line of buf.split('\n')) {
            if (!line.trim()) continue;
            try {
              const m = JSON.parse(line) as Record<string, unknown>;
              if (m.id === id) {
                socket.off('data', onData);
                buf = '';
                resolve(m);
                return;
              }
            } catch {
              // a partial line
            }
          }
        };
        socket.on('data', onData);
      });
    socket.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-first-list', version: '1' } } })}\n`);
    await answer(1);
    socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    const list = (await answer(2)).result as { tools: unknown[] };
    firstListSocket.push(performance.now() - t0);
    if (list.tools.length !== p.servers * 5) throw new Error(`the first tools/list had ${list.tools.length} tools, not ${p.servers * 5}`);
    socket.end();
  }
  const firstListSpawn: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const c = await open(user, true);
    await c.listTools();
    firstListSpawn.push(performance.now() - t0);
    await c.close();
  }
  await warm.close();
  await stopDaemon();
  return {
    shared,
    plain,
    latency: { shared: pathStats(samples.shared), stdio: pathStats(samples.stdio) },
    // ms over LATENCY.calls calls → µs per call.
    cpuPerCall: { stdio: (cpu.stdio * 1000) / LATENCY.calls, shim: (cpu.shim * 1000) / LATENCY.calls, daemon: (cpu.daemon * 1000) / LATENCY.calls },
    firstListSocket,
    firstListSpawn,
  };
});

// ── runner half ─────────────────────────────────────────────────────────────

const us = (x: number): string => `${(x * 1000).toFixed(0)} µs`;

/** Run measurement 8: the daemon's sharing, RSS, added latency and a warm session's first tools/list. */
export async function daemonBench(ctx: BenchContext, opts: { servers?: number; sessions?: number } = {}): Promise<MeasurementResult> {
  const servers = opts.servers ?? 10;
  const sessions = opts.sessions ?? 5;
  const runs: Sample[] = [];
  for (let i = 0; i < ctx.runs; i++) {
    const s = await ctx.workers.run<Sample>(SCRIPT, { dir: ctx.tmp, servers, sessions } satisfies Params, { execArgv: ctx.execArgv('daemon'), timeoutMs: 600_000 });
    ctx.log(
      `  run ${i + 1}: ${s.shared.serverProcesses} vs ${s.plain.serverProcesses} server processes, RSS ${mb(s.shared.rssBytes)} vs ${mb(s.plain.rssBytes)}; ` +
        `p50 ${us(s.latency.stdio.p50)} → ${us(s.latency.shared.p50)}, CPU/call ${s.cpuPerCall.stdio.toFixed(0)} µs → ${s.cpuPerCall.shim.toFixed(0)} + ${s.cpuPerCall.daemon.toFixed(0)} µs; first tools/list ${ms(median(s.firstListSocket))} (socket), ${ms(median(s.firstListSpawn))} (new shim)`,
    );
    runs.push(s);
  }
  const med = (f: (s: Sample) => number): number => median(runs.map(f));
  const added = med((s) => s.latency.shared.p50 - s.latency.stdio.p50);
  const first = med((s) => median(s.firstListSocket));
  const rows: Row[] = [
    {
      section: '8 daemon',
      figure: `${sessions} sessions × ${servers} servers via serve --stdio --shared: server processes`,
      ours: String(med((s) => s.shared.serverProcesses)),
      baseline: `${med((s) => s.plain.serverProcesses)} (${sessions} plain serve --stdio)`,
      ratio: ratio(med((s) => s.shared.serverProcesses), med((s) => s.plain.serverProcesses)),
      target: `= ${servers}`,
      pass: runs.every((s) => s.shared.serverProcesses === servers && s.shared.distinctPids === servers),
    },
    {
      section: '8 daemon',
      figure: `${sessions} sessions × ${servers} servers: total RSS (shims, daemon, servers) vs ${sessions} plain serve --stdio`,
      ours: mb(med((s) => s.shared.rssBytes)),
      baseline: mb(med((s) => s.plain.rssBytes)),
      ratio: ratio(med((s) => s.shared.rssBytes), med((s) => s.plain.rssBytes)),
      target: 'info (lower is better)',
    },
    {
      section: '8 daemon',
      figure: `tool call p50 via the shim and the daemon's socket (${LATENCY.calls} calls) vs serve --stdio`,
      ours: ms(med((s) => s.latency.shared.p50)),
      baseline: ms(med((s) => s.latency.stdio.p50)),
      ratio: ratio(med((s) => s.latency.shared.p50), med((s) => s.latency.stdio.p50)),
      target: `added p50 ≤ 0.5 ms (added: ${us(added)})`,
      pass: added <= 0.5,
    },
    {
      section: '8 daemon',
      figure: `CPU time per tool call: shim + daemon vs serve --stdio (µs, ${LATENCY.calls} calls; shim ${med((s) => s.cpuPerCall.shim).toFixed(0)} µs)`,
      ours: `${med((s) => s.cpuPerCall.shim + s.cpuPerCall.daemon).toFixed(0)} µs`,
      baseline: `${med((s) => s.cpuPerCall.stdio).toFixed(0)} µs`,
      ratio: ratio(med((s) => s.cpuPerCall.shim + s.cpuPerCall.daemon), med((s) => s.cpuPerCall.stdio)),
      target: 'info (added CPU per call)',
    },
    {
      section: '8 daemon',
      figure: `tool call p99 via the daemon vs serve --stdio`,
      ours: ms(med((s) => s.latency.shared.p99)),
      baseline: ms(med((s) => s.latency.stdio.p99)),
      ratio: ratio(med((s) => s.latency.shared.p99), med((s) => s.latency.stdio.p99)),
      target: 'info',
    },
    {
      section: '8 daemon',
      figure: `warm daemon: a new session's first complete tools/list (${servers * 5} tools), from connecting to the socket`,
      ours: ms(first),
      target: '≤ 50 ms',
      pass: first <= 50,
    },
    {
      section: '8 daemon',
      figure: 'warm daemon: the same from spawning a new serve --stdio --shared (Node start-up included)',
      ours: ms(med((s) => median(s.firstListSpawn))),
      target: 'info',
    },
  ];
  return { rows, details: { runs } };
}
