/**
 * The servers every benchmark talks to: the normal stdio fixture
 * (`test/fixtures/basic-server.ts`, five tools: echo, add, v<version>_tool,
 * env, pid), config files that list N of them, and the raw-SDK baseline
 * (a plain `Client` + the SDK's `StdioClientTransport`).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ServerConfig } from '../../machines/types.js';
import { RUN_MARKER, WORKER_MARKER } from './proc.js';

/** The compiled fixture server. */
export const FIXTURE = fileURLToPath(new URL('../../test/fixtures/basic-server.js', import.meta.url));

/** The light fixture: the same five tools without the SDK, ~0.1 s of CPU to start (docs/performance.md). */
export const LIGHT_FIXTURE = fileURLToPath(new URL('../../test/fixtures/light-server.js', import.meta.url));

/** Which fixture a benchmark's servers run. */
export type FixtureKind = 'basic' | 'light';

/** Tools each fixture server lists. */
export const TOOLS_PER_SERVER = 5;

/** `s01`, `s02`, …: names that sort in creation order. */
export function serverNames(n: number): string[] {
  const width = Math.max(2, String(n).length);
  return Array.from({ length: n }, (_, i) => `s${String(i + 1).padStart(width, '0')}`);
}

/** One fixture server whose version-dependent tool is `v<version>_tool`. */
export function fixtureConfig(version = '1', kind: FixtureKind = 'basic'): ServerConfig {
  return { command: process.execPath, args: [kind === 'light' ? LIGHT_FIXTURE : FIXTURE], env: { TOOLS_VERSION: version } };
}

/** The registered name of a fixture tool (fixture names need no sanitising). */
export function registeredName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/** Write a user-scope settings file listing `servers` (`name → version`). */
export function writeConfig(path: string, versions: Readonly<Record<string, string>>, kind: FixtureKind = 'basic'): void {
  const mcpServers = Object.fromEntries(Object.entries(versions).map(([name, v]) => [name, fixtureConfig(v, kind)]));
  writeFileSync(path, `${JSON.stringify({ mcpServers }, null, 2)}\n`);
}

/** `name → '1'` for N servers. */
export function initialVersions(n: number): Record<string, string> {
  return Object.fromEntries(serverNames(n).map((name) => [name, '1']));
}

/** A connected raw-SDK client and what it listed. */
export interface RawConnection {
  client: import('@modelcontextprotocol/client').Client;
  /** The server's PID. */
  pid: number | undefined;
  tools: string[];
  close(): Promise<void>;
}

/** The SDK line a raw host is built on: v2 (the connection layer's) or v1 (wave 2's baseline, for `--compare`). */
export type SdkLine = 'v2' | 'v1';

type Sdk = {
  Client: typeof import('@modelcontextprotocol/client').Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/client/stdio').StdioClientTransport;
};

/** Each line's classes, imported once per process. v1's are typed as v2's: the raw host uses only what both have alike. */
const sdks = new Map<SdkLine, Promise<Sdk>>();

const IMPORTS: Record<SdkLine, () => Promise<[{ Client: unknown }, { StdioClientTransport: unknown }]>> = {
  v2: () => Promise.all([import('@modelcontextprotocol/client'), import('@modelcontextprotocol/client/stdio')]),
  v1: () => Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/client/stdio.js')]),
};

/**
 * The controller starts each server in its own session (detached). With the
 * kernel's autogroup scheduler a session is a scheduling unit, so on a machine
 * with other load its servers would get more CPU than a plain host's children,
 * which share the host's session. The baseline's servers are therefore started
 * through setsid(1) (it execs in place: no extra process), so both sides are
 * scheduled alike; on an idle machine this changes nothing.
 */
const SETSID = ['/usr/bin/setsid', '/bin/setsid'].find((p) => existsSync(p));

/**
 * Load the SDK client classes (dynamically, so a worker can time its
 * imports): SDK v2, the line the connection layer is on, unless `line` asks
 * for v1, the baseline builds before SDK v2 were measured against. The baseline keeps
 * the SDK's default negotiation (the plain `initialize`): what a host that
 * sets nothing does, and no probe sibling per server.
 */
export function loadSdk(line: SdkLine = 'v2'): Promise<Sdk> {
  let loaded = sdks.get(line);
  if (!loaded) {
    loaded = IMPORTS[line]().then(([{ Client }, { StdioClientTransport }]) => ({ Client, StdioClientTransport }) as Sdk);
    sdks.set(line, loaded);
  }
  return loaded;
}

/**
 * The baseline: what a host without a manager does for one server — spawn it
 * with the SDK's own transport, initialize, list its tools. The child gets the
 * SDK's default environment plus the server's `env` and the benchmark markers
 * (so a crashed run's children can still be found and killed).
 */
export async function rawConnect(config: ServerConfig, line: SdkLine = 'v2'): Promise<RawConnection> {
  const { Client, StdioClientTransport } = await loadSdk(line);
  const markers: Record<string, string> = {};
  for (const name of [RUN_MARKER, WORKER_MARKER]) {
    const v = process.env[name];
    if (v !== undefined) markers[name] = v;
  }
  const transport = new StdioClientTransport({
    command: SETSID ?? config.command!,
    args: SETSID ? [config.command!, ...(config.args ?? [])] : (config.args ?? []),
    env: { ...markers, ...(config.env ?? {}) },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'raw-sdk-baseline', version: '1.0.0' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  return { client, pid: transport.pid ?? undefined, tools: tools.map((t) => t.name), close: () => client.close() };
}

/** Resolve after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
