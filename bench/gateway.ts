/**
 * 6. The gateway (`mcp-reconciler serve`).
 *
 * a) Added latency per tool call: in one worker, the same fixture tool
 *    (`echo`) is called 1 000 times through a direct SDK client to the
 *    fixture server (the baseline), through `serve --stdio` and through
 *    `serve --http`, in interleaved blocks of 100 so that drift of the machine
 *    hits every path alike. Reported: p50 and p99 of each path, the p50
 *    difference (the added latency; target ≤ 1 ms on loopback) and the ratio.
 *    Both protocol eras: the 2025 lane with the SDK v1 client, the
 *    2026-07-28 lane (SPEC §15) with the SDK v2 client pinned to that
 *    revision, each against a direct client of the same SDK and revision
 *    (the v2 fixtures, new revision only) over the same transport.
 * b) Sharing: `serve --http` with 10 servers, 2 sessions that both use all
 *    10; each session calls `pid` on every server. Counted: distinct server
 *    PIDs and live server processes (target 10; one gateway per session,
 *    what a host without a shared pool runs, would be 20).
 *
 * Every process carries the bench markers (the servers through their config
 * `env`), so the runner kills whatever a failed run leaves behind.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, type BenchContext, type MeasurementResult, type Row } from './support/context.js';
import { markedPids, markerEnv, plainNodeEnv, WORKER_MARKER } from './support/proc.js';
import { FIXTURE, loadSdk, rawConnect, serverNames } from './support/servers.js';
import { CLI, LATENCY, pathStats, serveStdioParams, timeInterleaved, type CallFn, type PathStats } from './support/latency.js';
import { median, ratio } from './support/stats.js';
import { runAsWorker } from './support/worker.js';

const SCRIPT = fileURLToPath(import.meta.url);

interface LatencyParams {
  dir: string;
  calls: number;
}

interface LatencySample {
  /** SDK client → fixture over stdio. */
  direct: PathStats;
  stdio: PathStats;
  /** SDK client → the HTTP fixture over streamable HTTP: the baseline of the HTTP gateway. */
  directHttp: PathStats;
  http: PathStats;
  /** SDK v2 client pinned to 2026-07-28 → the v2 stdio fixture: the baseline of the new stdio lane. */
  directModern: PathStats;
  stdioModern: PathStats;
  /** SDK v2 client pinned to 2026-07-28 → the v2 HTTP fixture: the baseline of the new HTTP lane. */
  directModernHttp: PathStats;
  httpModern: PathStats;
}

const MODERN = '2026-07-28';

interface SharingParams {
  dir: string;
  servers: number;
  sessions: number;
}

interface SharingSample {
  distinctPids: number;
  serverProcesses: number;
  sessions: number;
  servers: number;
}

function writeGatewayConfig(dir: string, name: string, servers: string[]): { user: string; approvals: string } {
  const user = join(dir, `${name}.json`);
  const mcpServers = Object.fromEntries(servers.map((s) => [s, { command: process.execPath, args: [FIXTURE], env: { TOOLS_VERSION: '1', ...markerEnv() } }]));
  writeFileSync(user, `${JSON.stringify({ mcpServers }, null, 2)}\n`);
  return { user, approvals: join(dir, `${name}-approvals.json`) };
}

/** The HTTP fixture server as a child; resolves with its URL once it listens. */
async function startHttpFixture(name = 'http-server', env: Record<string, string> = {}): Promise<{ url: string; stop(): Promise<void> }> {
  const script = FIXTURE.replace(/basic-server\.js$/, `${name}.js`);
  const child = spawn(process.execPath, [script], { env: { ...plainNodeEnv(), PORT: '0', TOOLS_VERSION: '1', ...env }, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the HTTP fixture exited (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A `serve --http` child; resolves with its URL and token from stderr. */
async function startHttpServe(dir: string, cfg: { user: string; approvals: string }): Promise<{ url: string; token: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--http', '--cwd', dir, '--user-config', cfg.user, '--approvals', cfg.approvals], {
    env: { ...plainNodeEnv(), HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const found = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const url = /listening on (\S+)/.exec(stderr)?.[1];
      const token = /access token: (\S+)/.exec(stderr)?.[1];
      if (url && token) resolve({ url, token });
    });
    child.once('exit', (code) => reject(new Error(`serve --http exited (${code}): ${stderr}`)));
  });
  return {
    ...found,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

runAsWorker<LatencyParams | SharingParams, LatencySample | SharingSample>(import.meta.url, async (p) => {
  const { Client, StdioClientTransport } = await loadSdk();
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');

  if ('servers' in p) {
    // b) sharing
    const names = serverNames(p.servers);
    const cfg = writeGatewayConfig(p.dir, 'gateway-sharing', names);
    const serve = await startHttpServe(p.dir, cfg);
    const clients: InstanceType<typeof Client>[] = [];
    try {
      const pids = new Set<string>();
      await Promise.all(
        Array.from({ length: p.sessions }, async () => {
          const client = new Client({ name: 'bench-session', version: '1.0.0' });
          clients.push(client);
          await client.connect(new StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { authorization: `Bearer ${serve.token}` } } }));
          await client.listTools();
          for (const name of names) {
            const r = (await client.callTool({ name: `mcp__${name}__pid`, arguments: {} })) as { content: Array<{ text?: string }> };
            pids.add(r.content[0]?.text ?? '?');
          }
        }),
      );
      const worker = process.env[WORKER_MARKER];
      const serverProcesses = worker
        ? markedPids(WORKER_MARKER, worker).filter((pid) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('basic-server');
            } catch {
              return false;
            }
          }).length
        : pids.size;
      return { distinctPids: pids.size, serverProcesses, sessions: p.sessions, servers: p.servers };
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await serve.stop();
    }
  }

  // a) latency
  const cfg = writeGatewayConfig(p.dir, 'gateway-latency', ['s01']);
  const direct = await rawConnect({ command: process.execPath, args: [FIXTURE], env: { TOOLS_VERSION: '1' } });
  // serve --stdio as both SDKs' clients spawn it.
  const serveStdio = serveStdioParams(CLI, p.dir, cfg);
  const viaStdio = new Client({ name: 'bench-gateway-stdio', version: '1.0.0' });
  await viaStdio.connect(new StdioClientTransport(serveStdio));
  const fixture = await startHttpFixture();
  const directHttp = new Client({ name: 'bench-direct-http', version: '1.0.0' });
  await directHttp.connect(new StreamableHTTPClientTransport(new URL(fixture.url)));
  const serve = await startHttpServe(p.dir, cfg);
  const viaHttp = new Client({ name: 'bench-gateway-http', version: '1.0.0' });
  await viaHttp.connect(new StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { authorization: `Bearer ${serve.token}` } } }));
  // The 2026-07-28 lane: SDK v2 clients pinned to the revision, against the v2 fixtures and the same gateways.
  const v2 = await import('@modelcontextprotocol/client');
  const { StdioClientTransport: StdioV2 } = await import('@modelcontextprotocol/client/stdio');
  const pinned = (name: string) => new v2.Client({ name, version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
  const directModern = pinned('bench-direct-modern');
  await directModern.connect(
    new StdioV2({ command: process.execPath, args: [FIXTURE.replace(/basic-server\.js$/, 'v2-stdio-server.js')], env: { ...plainNodeEnv(), V2_LEGACY: 'reject' }, stderr: 'ignore' }),
  );
  const stdioModern = pinned('bench-gateway-stdio-modern');
  await stdioModern.connect(new StdioV2(serveStdio));
  const fixtureModern = await startHttpFixture('v2-http-server', { V2_LEGACY: 'reject' });
  const directModernHttp = pinned('bench-direct-modern-http');
  await directModernHttp.connect(new v2.StreamableHTTPClientTransport(new URL(fixtureModern.url)));
  const httpModern = pinned('bench-gateway-http-modern');
  await httpModern.connect(new v2.StreamableHTTPClientTransport(new URL(serve.url), { requestInit: { headers: { authorization: `Bearer ${serve.token}` } } }));
  try {
    const args = { text: 'ping' };
    const paths: Record<keyof LatencySample, CallFn> = {
      direct: () => direct.client.callTool({ name: 'echo', arguments: args }),
      stdio: () => viaStdio.callTool({ name: 'mcp__s01__echo', arguments: args }),
      directHttp: () => directHttp.callTool({ name: 'echo', arguments: args }),
      http: () => viaHttp.callTool({ name: 'mcp__s01__echo', arguments: args }),
      directModern: () => directModern.callTool({ name: 'echo', arguments: args }),
      stdioModern: () => stdioModern.callTool({ name: 'mcp__s01__echo', arguments: args }),
      directModernHttp: () => directModernHttp.callTool({ name: 'echo', arguments: args }),
      httpModern: () => httpModern.callTool({ name: 'mcp__s01__echo', arguments: args }),
    };
    const samples = await timeInterleaved(paths, p.calls);
    return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, pathStats(v)])) as unknown as LatencySample;
  } finally {
    for (const c of [httpModern, directModernHttp, stdioModern, directModern]) await c.close().catch(() => undefined);
    await fixtureModern.stop();
    await viaHttp.close().catch(() => undefined);
    await viaStdio.close().catch(() => undefined);
    await direct.close().catch(() => undefined);
    await directHttp.close().catch(() => undefined);
    await serve.stop();
    await fixture.stop();
  }
});

// ── runner half ─────────────────────────────────────────────────────────────

const us = (x: number): string => `${(x * 1000).toFixed(0)} µs`;

/** Run measurement 6: added latency through the gateway, and one process per server across sessions. */
export async function gatewayBench(ctx: BenchContext, opts: { servers?: number; sessions?: number } = {}): Promise<MeasurementResult> {
  const runs: LatencySample[] = [];
  for (let i = 0; i < ctx.runs; i++) {
    const s = await ctx.workers.run<LatencySample>(SCRIPT, { dir: ctx.tmp, calls: LATENCY.calls } satisfies LatencyParams, {
      execArgv: ctx.execArgv('gateway'),
      timeoutMs: 900_000, // eight paths of 1 100 calls each
    });
    ctx.log(
      `  run ${i + 1}: p50 direct ${us(s.direct.p50)} → serve --stdio ${us(s.stdio.p50)}; direct HTTP ${us(s.directHttp.p50)} → serve --http ${us(s.http.p50)}; ` +
        `p99 ${us(s.direct.p99)} → ${us(s.stdio.p99)}; ${us(s.directHttp.p99)} → ${us(s.http.p99)}`,
    );
    ctx.log(
      `         2026-07-28: p50 direct ${us(s.directModern.p50)} → serve --stdio ${us(s.stdioModern.p50)}; direct HTTP ${us(s.directModernHttp.p50)} → serve --http ${us(s.httpModern.p50)}; ` +
        `p99 ${us(s.directModern.p99)} → ${us(s.stdioModern.p99)}; ${us(s.directModernHttp.p99)} → ${us(s.httpModern.p99)}`,
    );
    runs.push(s);
  }
  const med = (f: (s: LatencySample) => number): number => median(runs.map(f));
  const rows: Row[] = [];
  // Each gateway path against a direct client over the same transport: the difference is what the gateway adds.
  const lanes = [
    ['stdio', 'direct', 'stdio', ''],
    ['http', 'directHttp', 'http', ''],
    ['stdioModern', 'directModern', 'stdio', ' (2026-07-28, SDK v2 clients)'],
    ['httpModern', 'directModernHttp', 'http', ' (2026-07-28, SDK v2 clients)'],
  ] as const;
  for (const [key, base, path, era] of lanes) {
    const direct50 = med((s) => s[base].p50);
    const direct99 = med((s) => s[base].p99);
    const p50 = med((s) => s[key].p50);
    const p99 = med((s) => s[key].p99);
    const added = med((s) => s[key].p50 - s[base].p50);
    rows.push(
      {
        section: '6 gateway',
        figure: `tool call p50 via serve --${path} (${LATENCY.calls} calls) vs direct SDK client over ${path}${era}`,
        ours: ms(p50),
        baseline: ms(direct50),
        ratio: ratio(p50, direct50),
        target: `added p50 ≤ 1 ms (added: ${us(added)})`,
        pass: added <= 1,
      },
      {
        section: '6 gateway',
        figure: `tool call p99 via serve --${path} vs direct SDK client over ${path}${era}`,
        ours: ms(p99),
        baseline: ms(direct99),
        ratio: ratio(p99, direct99),
        target: `info (added: ${us(med((s) => s[key].p99 - s[base].p99))})`,
      },
    );
  }
  const servers = opts.servers ?? 10;
  const sessions = opts.sessions ?? 2;
  const share = await ctx.workers.run<SharingSample>(SCRIPT, { dir: ctx.tmp, servers, sessions } satisfies SharingParams, {
    execArgv: ctx.execArgv('gateway'),
    timeoutMs: 300_000,
  });
  ctx.log(`  sharing: ${share.sessions} sessions × ${share.servers} servers → ${share.serverProcesses} server processes, ${share.distinctPids} distinct PIDs`);
  rows.push({
    section: '6 gateway',
    figure: `${sessions} HTTP sessions × ${servers} servers: server processes`,
    ours: String(share.serverProcesses),
    baseline: `${sessions * servers} (a gateway per session)`,
    ratio: ratio(share.serverProcesses, sessions * servers),
    target: `= ${servers}`,
    pass: share.serverProcesses === servers && share.distinctPids === servers,
  });
  return { rows, details: { latency: runs, sharing: share } };
}
