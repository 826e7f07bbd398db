/**
 * The gateway of two builds side by side: `serve --stdio` of each CLI (the
 * 2025 lane, an SDK v1 client, as `bench/gateway.ts` measures it) with one
 * fixture server, the same `echo` called through both in blocks of 100 that
 * take turns going first. Prints each gateway's p50 and its own CPU per
 * call (read from /proc around each block), so a change of the bundle can be
 * told from the machine's drift (docs/performance.md, "The SDK inside the
 * bundle").
 *
 *   npm run build && node dist/bench/gateway-builds.js OLD/dist/cli/main.js dist/cli/main.js [--calls 2000] [--runs 3]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LATENCY, pathStats, serveStdioParams, timeInterleaved, type CallFn } from './support/latency.js';
import { cpuTimeMs } from './support/proc.js';
import { FIXTURE } from './support/servers.js';

interface Gateway {
  call: CallFn;
  pid: number;
  close(): Promise<void>;
}

async function startGateway(cli: string, dir: string): Promise<Gateway> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const transport = new StdioClientTransport(serveStdioParams(cli, dir, { user: join(dir, 'user.json'), approvals: join(dir, 'approvals.json') }));
  const client = new Client({ name: 'bench-gateway-builds', version: '1.0.0' });
  await client.connect(transport);
  const echo = (await client.listTools()).tools.find((t) => t.name.endsWith('__echo'));
  if (!echo || transport.pid === null) throw new Error(`${cli}: the gateway lists no echo tool`);
  return { call: () => client.callTool({ name: echo.name, arguments: { text: 'hi' } }), pid: transport.pid, close: () => client.close() };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { calls: { type: 'string', default: '2000' }, runs: { type: 'string', default: '3' } } });
  if (positionals.length !== 2) throw new Error('usage: gateway-builds.js CLI_A CLI_B [--calls N] [--runs N]');
  const clis = { a: positionals[0]!, b: positionals[1]! };
  for (let run = 1; run <= Number(values.runs); run++) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-gateway-builds-'));
    writeFileSync(join(dir, 'user.json'), JSON.stringify({ mcpServers: { s01: { command: process.execPath, args: [FIXTURE], env: { TOOLS_VERSION: '1' } } } }));
    const gateways = { a: await startGateway(clis.a, dir), b: await startGateway(clis.b, dir) };
    try {
      const cpu = { a: 0, b: 0 };
      const samples = await timeInterleaved({ a: gateways.a.call, b: gateways.b.call }, Number(values.calls), async (key, block) => {
        const before = cpuTimeMs(gateways[key].pid);
        await block();
        cpu[key] += cpuTimeMs(gateways[key].pid) - before;
      });
      for (const key of ['a', 'b'] as const) {
        const { p50 } = pathStats(samples[key]);
        console.log(`run ${run} ${key} ${clis[key]}: p50 ${p50.toFixed(3)} ms, gateway CPU ${(cpu[key] / samples[key].length).toFixed(3)} ms per call (${samples[key].length} calls, blocks of ${LATENCY.block})`);
      }
    } finally {
      await Promise.all([gateways.a.close(), gateways.b.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

await main();
