/**
 * Which files of src/ and machines/ run while one config edit travels from
 * the file watcher to the registry (docs/architecture.md, "A config edit,
 * traced"). A controller watches a user-scope file with one fixture server;
 * the script edits that server's env (a new fingerprint: reconnect, new
 * listing, registry commit) and reads V8's precise coverage for exactly that
 * window: every function that ran, by file. Not a benchmark: it prints the
 * files in the order of the path, with how many of their functions ran.
 *
 *   npx tsc -p . && node dist/bench/config-edit-trace.js
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { userConfigOptions } from './support/library.js';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '..');

interface FunctionCoverage {
  functionName: string;
  ranges: { count: number }[];
}

async function main(): Promise<void> {
  const { createMcpController } = (await import(pathToFileURL(join(dist, 'src/index.js')).href)) as typeof import('../src/index.js');
  const server = join(dist, 'test/fixtures/basic-server.js');
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-trace-'));
  const file = join(dir, 'user.json');
  const write = (version: string): void =>
    writeFileSync(file, JSON.stringify({ mcpServers: { s: { command: process.execPath, args: [server], env: { TOOLS_VERSION: version } } } }));
  write('1');
  const mcp = createMcpController({
    ...userConfigOptions(dir, file),
    listingCache: false,
    logDir: false,
    processStateFile: false,
    env: { ...process.env, HOME: dir },
    debounceMs: 50,
  });
  const session = new Session();
  session.connect();
  try {
    await mcp.start();
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await session.post('Profiler.takePreciseCoverage'); // resets the counts: only the edit's window is read below (to the new listing's commit)
    const committed = new Promise<void>((resolve) => {
      const off = mcp.on('tools-changed', (e) => {
        if (e.server === 's' && e.added.length + e.updated.length > 0) {
          off();
          resolve();
        }
      });
    });
    write('2');
    await committed;
    const { result } = (await session.post('Profiler.takePreciseCoverage')) as { result: { url: string; functions: FunctionCoverage[] }[] };
    const ran = new Map<string, string[]>();
    for (const script of result) {
      if (!script.url.startsWith('file:')) continue;
      const path = relative(dist, fileURLToPath(script.url));
      if (!/^(src|machines)\//.test(path)) continue;
      const names = script.functions.filter((f) => (f.ranges[0]?.count ?? 0) > 0).map((f) => f.functionName || '(anonymous)');
      if (names.length > 0) ran.set(path.replace(/\.js$/, '.ts'), names);
    }
    const rows = [...ran].sort(([a], [b]) => a.localeCompare(b));
    for (const [path, names] of rows) console.log(`${String(names.length).padStart(4)}  ${path}  ${[...new Set(names)].slice(0, 12).join(', ')}`);
    console.log(`${rows.length} files of src/ and machines/ ran between the save and the registry commit`);
    const controller = ran.get('src/controller/controller.ts') ?? [];
    console.log(`controller/controller.ts: ${controller.length} function(s) ran: ${controller.join(', ')}`);
  } finally {
    await session.post('Profiler.stopPreciseCoverage').catch(() => undefined);
    session.disconnect();
    await mcp.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
