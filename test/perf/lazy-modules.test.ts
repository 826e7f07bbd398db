/**
 * docs/performance.md (the manager's RSS): a host whose servers all run over stdio never
 * loads the SDK's HTTP transports, the SDK's OAuth module or our own OAuth
 * code. A real host process imports the built library, starts a stdio server
 * and lists its tools, with a module hook recording every module it loads.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { cliBin, fixturePath, repoRoot } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { startTestRedis } from '../helpers/redis.js';

const LAZY = [
  '@modelcontextprotocol/sdk/dist/esm/client/auth.js',
  '@modelcontextprotocol/sdk/dist/esm/client/sse.js',
  '@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js',
  '/dist/src/auth/manager.js',
  '/dist/src/auth/cross-app-access.js',
];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * Run a host that imports `entry` (default: the unbundled build), starts
 * `servers`, runs `then` (host code with `c`, the controller) and return every
 * module URL it loaded, then every CommonJS file it required (as `cjs:` paths).
 */
function loadedModules(servers: Record<string, unknown>, entry = pathToFileURL(join(repoRoot, 'dist/src/index.js')).href, then = ''): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'lazy-modules-'));
  dirs.push(dir);
  const log = join(dir, 'loaded.txt');
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(hooks, `import { appendFileSync } from 'node:fs';\nexport async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }\n`);
  writeFileSync(join(dir, 'settings.json'), JSON.stringify({ mcpServers: servers }));
  const host = `
    import { register } from 'node:module';
    register(${JSON.stringify(pathToFileURL(hooks).href)});
    const { createMcpController } = await import(${JSON.stringify(entry)});
    const c = createMcpController({ cwd: ${JSON.stringify(dir)}, sources: [{ scope: 'user', path: ${JSON.stringify(join(dir, 'settings.json'))} }],
      approvals: ${JSON.stringify(join(dir, 'approvals.json'))}, watch: false, listingCache: false, processStateFile: false });
    try { await c.start(); if (c.tools().length === 0) throw new Error('no tools: ' + JSON.stringify(c.status())); ${then} } finally { await c.dispose(); }
    const { appendFileSync } = await import('node:fs');
    const { createRequire } = await import('node:module');
    appendFileSync(${JSON.stringify(log)}, Object.keys(createRequire(import.meta.url).cache).map((f) => 'cjs:' + f + '\\n').join(''));
  `;
  execFileSync(process.execPath, ['--input-type=module', '-e', host], { cwd: entry.startsWith('file:') ? dir : repoRoot, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

describe('module loading', () => {
  it('a stdio-only workspace loads no HTTP transport and no OAuth code', () => {
    const loaded = loadedModules({ s: { command: process.execPath, args: [fixturePath('basic-server')] } });
    expect(loaded.some((u) => u.endsWith('/dist/src/connection/connect.js'))).toBe(true);
    for (const m of LAZY) expect(loaded.filter((u) => u.endsWith(m)), m).toEqual([]);
  });

  it('the published entry (the bundle in dist/lib) loads a few chunks, no HTTP transport and no OAuth code', () => {
    const loaded = loadedModules({ s: { command: process.execPath, args: [fixturePath('basic-server')] } }, 'mcp-reconciler');
    const ours = loaded.filter((u) => u.includes(`${pathToFileURL(repoRoot).href}/dist/`));
    expect(ours.some((u) => u.endsWith('/dist/lib/index.js'))).toBe(true);
    // Not one unbundled module, and the chunks of the lazily loaded parts stay unloaded.
    expect(ours.filter((u) => !u.includes('/dist/lib/'))).toEqual([]);
    expect(ours.filter((u) => /\/dist\/lib\/(manager|cross-app-access|gateway|server|tool-search)-/.test(u))).toEqual([]);
    // Files, not resolutions: a chunk several others import is resolved once per importer.
    expect(new Set(ours).size).toBeLessThan(10);
    for (const m of LAZY.filter((x) => x.startsWith('@'))) expect(loaded.filter((u) => u.endsWith(m)), m).toEqual([]);
  });

  it('the published entry carries the SDK and zod inside it, and loads Ajv only when a schema is checked', () => {
    const servers = { s: { command: process.execPath, args: [fixturePath('basic-server')] } };
    const fromPackages = (loaded: string[]) => loaded.filter((u) => /\/node_modules\/(@modelcontextprotocol|zod|ajv)\b/.test(u));
    // Import, start, list, and call a tool without an outputSchema: nothing of the SDK, zod or Ajv from node_modules.
    const plain = loadedModules(servers, 'mcp-reconciler', `await c.callTool('mcp__s__echo', { text: 'hi' });`);
    expect(plain.some((u) => u.endsWith('/dist/lib/index.js'))).toBe(true);
    expect(fromPackages(plain)).toEqual([]);
    // A tool with an outputSchema: its result is checked against it, which loads Ajv (the client's CommonJS build), and only that.
    const checked = loadedModules(
      servers,
      'mcp-reconciler',
      `const r = await c.callTool('mcp__s__add', { a: 2, b: 3 }); if (r.structuredContent?.sum !== 5 || r.isError) throw new Error('add: ' + JSON.stringify(r));`,
    );
    const ajv = fromPackages(checked);
    expect(ajv.some((u) => u.startsWith('cjs:') && u.includes('/node_modules/@modelcontextprotocol/client/dist/ajvProvider-'))).toBe(true);
    expect(ajv.filter((u) => !u.startsWith('cjs:'))).toEqual([]);
  });
});

/**
 * docs/cluster.md: `serve` without `--cluster` loads nothing of Redis or of
 * JOSE. The built CLI runs under the same module hook until it is ready; the
 * same run with `--cluster` (against a real redis-server) shows the hook sees
 * them when they are loaded.
 */
describe('module loading of serve', () => {
  const CLUSTER_ONLY = ['/node_modules/@redis/', '/node_modules/jose/', '/dist/src/cluster/', '/dist/cli/cluster'];

  async function serveModules(extra: string[]): Promise<string[]> {
    const dir = mkdtempSync(join(tmpdir(), 'lazy-serve-'));
    dirs.push(dir);
    const log = join(dir, 'loaded.txt');
    writeFileSync(join(dir, 'hooks.mjs'), `import { appendFileSync } from 'node:fs';\nexport async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }\n`);
    writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`);
    writeFileSync(join(dir, 'settings.json'), JSON.stringify({ mcpServers: { s: { command: process.execPath, args: [fixturePath('basic-server')] } } }));
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, MCP_RECONCILER_GATEWAY_TOKEN: 'x'.repeat(32) };
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, ['--import', pathToFileURL(join(dir, 'register.mjs')).href, cliBin, 'serve', '--http', ...extra, '--cwd', dir, '--user-config', join(dir, 'settings.json'), '--approvals', join(dir, 'approvals.json')], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitFor(() => /listening on/.test(stderr) || child.exitCode !== null, 'serve to listen', 60_000);
      expect(stderr).toMatch(/listening on/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    return readFileSync(log, 'utf8').split('\n').filter(Boolean);
  }

  it('serve --http without --cluster loads nothing of Redis or JOSE; with --cluster it does', async () => {
    const plain = await serveModules([]);
    expect(plain.some((u) => u.includes('/dist/cli/'))).toBe(true);
    for (const m of CLUSTER_ONLY) expect(plain.filter((u) => u.includes(m)), m).toEqual([]);
    const redis = await startTestRedis();
    try {
      // The JWKS is fetched on the first request only: nothing is sent to that port.
      const clustered = await serveModules(['--cluster', redis.socket, '--workspace-id', 'lazy', '--auth-issuer', 'http://127.0.0.1:9', '--auth-jwks', 'http://127.0.0.1:9/jwks']);
      expect(clustered.some((u) => u.includes('/node_modules/@redis/'))).toBe(true);
      expect(clustered.some((u) => u.includes('/node_modules/jose/'))).toBe(true);
    } finally {
      await redis.cleanup();
    }
  }, 120_000);
});
