/**
 * docs/cluster.md, measured unit costs of a clustered gateway: a real
 * redis-server (unix socket), a local identity provider (JWKS), and two
 * `serve --http --cluster` replicas of the built binary with one stdio
 * fixture server each. Run: `npm run build && node dist/bench/cluster.js`
 * (writes bench/cluster-results.json; `node dist/bench/cluster-sim.js` then
 * checks the simulation against it). Every process started is stopped at
 * the end, also on failure.
 *
 * Measured:
 *  - per call (one client, 1 000 calls after 200 warm-up): wall latency p50
 *    and mean, and the CPU each process spends per call (client, gateway,
 *    managed server; from /proc), and Redis commands per call (INFO
 *    commandstats before and after);
 *  - per session: Redis commands per session (initialize, tools/list,
 *    DELETE), and the gateway's RSS per idle open session (50 sessions; the default cap is 64);
 *  - throughput: 8 closed-loop clients, 4 per replica, 5 s: calls/s and mean latency.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createConnection, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../test/fixtures/basic-server.js', import.meta.url));
const OUT = fileURLToPath(new URL('../../bench/cluster-results.json', import.meta.url));
const PUBLIC_URL = 'http://gateway.bench/mcp';
const TICKS = 100; // USER_HZ

const children: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function redisCommand(socket: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = createConnection(socket);
    let out = '';
    conn.setEncoding('utf8');
    conn.on('connect', () => conn.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`));
    conn.on('data', (d: string) => {
      out += d;
      setTimeout(() => conn.end(), 20);
    });
    conn.on('close', () => resolve(out));
    conn.on('error', reject);
  });
}

/** Total commands Redis has served, minus the INFO calls that asked. */
async function redisCalls(socket: string): Promise<number> {
  const info = await redisCommand(socket, ['INFO', 'commandstats']);
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (m[1] !== 'info') total += Number(m[2]);
  return total;
}

function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) / TICKS) * 1000; // ms
}

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(e));
    } catch {
      // gone
    }
  }
  return out;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-cluster-bench-'));
  try {
    // Redis.
    const socket = join(dir, 'redis.sock');
    const redis = spawn('/usr/bin/redis-server', ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    children.push(redis);
    for (let i = 0; i < 200 && !(existsSync(socket) && (await redisCommand(socket, ['PING']).catch(() => '')).startsWith('+PONG')); i++) await sleep(50);
    // Identity provider.
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const idp = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    const token = await new SignJWT({ scope: 'mcp:servers' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setSubject('bench').setIssuer(issuer).setAudience(PUBLIC_URL).setExpirationTime('2h').sign(privateKey);
    // Workspace and replicas.
    writeFileSync(join(dir, 'user.json'), JSON.stringify({ mcpServers: { s: { command: process.execPath, args: [FIXTURE] } } }));
    const replicas: { pid: number; url: string }[] = [];
    for (const name of ['a', 'b']) {
      const home = join(dir, `home-${name}`);
      mkdirSync(home, { recursive: true });
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
      delete env.NODE_OPTIONS;
      const child = spawn(
        process.execPath,
        [CLI, 'serve', '--http', '--cluster', socket, '--workspace-id', 'bench', '--auth-issuer', issuer, '--auth-jwks', `${issuer}/jwks`, '--public-url', PUBLIC_URL, '--cwd', dir, '--user-config', join(dir, 'user.json'), '--approvals', join(dir, 'approvals.json')],
        { env, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(child);
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      for (let i = 0; i < 600 && !/listening on/.test(err); i++) await sleep(50);
      const url = /listening on (\S+)/.exec(err)?.[1];
      if (!url) throw new Error(`replica ${name} did not start: ${err}`);
      replicas.push({ pid: child.pid!, url });
    }
    const open = async (url: string, query = '?servers=s') => {
      const client = new Client({ name: 'bench', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(`${url}${query}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
      await client.connect(transport);
      return { client, transport };
    };
    const call = (c: Client) => c.callTool({ name: 'mcp__s__echo', arguments: { text: 'x' } });

    // Per call, one client on replica A.
    const a = await open(replicas[0]!.url);
    await a.client.listTools();
    for (let i = 0; i < 200; i++) await call(a.client);
    const serverPid = childrenOf(replicas[0]!.pid).find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('basic-server'))!;
    const calls = 1000;
    const r0 = await redisCalls(socket);
    const gw0 = cpuOf(replicas[0]!.pid);
    const srv0 = cpuOf(serverPid);
    const cl0 = process.cpuUsage();
    const lat: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) {
      const s = performance.now();
      await call(a.client);
      lat.push(performance.now() - s);
    }
    const wall = performance.now() - t0;
    const cl = process.cpuUsage(cl0);
    const perCall = {
      p50Ms: quantile([...lat].sort((x, y) => x - y), 0.5),
      p99Ms: quantile([...lat].sort((x, y) => x - y), 0.99),
      meanMs: wall / calls,
      cpuMs: { client: (cl.user + cl.system) / 1000 / calls, gateway: (cpuOf(replicas[0]!.pid) - gw0) / calls, server: (cpuOf(serverPid) - srv0) / calls },
      redisOps: ((await redisCalls(socket)) - r0) / calls,
    };
    console.log('per call', perCall);

    // Per session: Redis commands, and RSS of idle open sessions.
    const sessionsN = 20;
    const s0 = await redisCalls(socket);
    for (let i = 0; i < sessionsN; i++) {
      const s = await open(replicas[1]!.url);
      await s.client.listTools();
      await s.transport.terminateSession();
      await s.client.close();
    }
    const redisOpsPerSession = ((await redisCalls(socket)) - s0) / sessionsN;
    const rssBefore = rssKb(replicas[1]!.pid);
    const idle: Awaited<ReturnType<typeof open>>[] = [];
    for (let i = 0; i < 50; i++) idle.push(await open(replicas[1]!.url));
    await sleep(500);
    const rssPerSessionKb = (rssKb(replicas[1]!.pid) - rssBefore) / 50;
    for (const s of idle) {
      await s.transport.terminateSession().catch(() => undefined);
      await s.client.close();
    }
    const perSession = { redisOps: redisOpsPerSession, rssKb: rssPerSessionKb };
    console.log('per session', perSession);

    // Throughput: 8 closed-loop clients, 4 per replica.
    const clients = [];
    for (let i = 0; i < 8; i++) clients.push(await open(replicas[i % 2]!.url));
    for (const c of clients) for (let i = 0; i < 20; i++) await call(c.client);
    const durationMs = 5000;
    const serverPids = replicas.map((r) => childrenOf(r.pid).find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('basic-server'))!);
    const g0 = replicas.map((r) => cpuOf(r.pid));
    const sv0 = serverPids.map(cpuOf);
    const c0 = process.cpuUsage();
    const one0 = await (async () => {
      // The same one-client figure just before, for the background load of this moment.
      const s = performance.now();
      for (let i = 0; i < 100; i++) await call(clients[0]!.client);
      return (performance.now() - s) / 100;
    })();
    const g1 = replicas.map((r) => cpuOf(r.pid));
    const sv1 = serverPids.map(cpuOf);
    const c1 = process.cpuUsage(c0);
    const until = performance.now() + durationMs;
    const lats: number[] = [];
    const tStart = performance.now();
    await Promise.all(
      clients.map(async (c) => {
        while (performance.now() < until) {
          const s = performance.now();
          await call(c.client);
          lats.push(performance.now() - s);
        }
      }),
    );
    const elapsed = performance.now() - tStart;
    const c2 = process.cpuUsage(c0);
    const n = lats.length;
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const throughput = {
      clients: 8,
      replicas: 2,
      callsPerS: (n / elapsed) * 1000,
      meanMs: sum(lats) / n,
      // CPU per call under this load, and the one-client latency measured just before it (100 calls).
      cpuMs: {
        client: ((c2.user + c2.system - (c1.user + c1.system)) / 1000) / n,
        gateway: sum(replicas.map((r, i) => cpuOf(r.pid) - g1[i]!)) / n,
        server: sum(serverPids.map((p, i) => cpuOf(p) - sv1[i]!)) / n,
      },
      oneClientBeforeMs: one0,
      oneClientCpuMs: {
        client: (c1.user + c1.system) / 1000 / 100,
        gateway: sum(replicas.map((r, i) => g1[i]! - g0[i]!)) / 100,
        server: sum(serverPids.map((p, i) => sv1[i]! - sv0[i]!)) / 100,
      },
    };
    console.log('throughput', throughput);
    for (const c of [a, ...clients]) await c.client.close();
    const loadavg = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
    writeFileSync(OUT, `${JSON.stringify({ at: new Date().toISOString(), cores: (await import('node:os')).cpus().length, loadavg, perCall, perSession, throughput }, null, 2)}\n`);
    console.log(`written ${OUT}`);
    idp.close();
  } finally {
    for (const c of children.reverse()) c.kill('SIGTERM');
    await sleep(1500);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
