/**
 * The 2025 schema warm-up (src/connection/schema-warmup.ts) opens a
 * throwaway handshake nobody answers: one `initialize` through the SDK's
 * `request` (where the SDK builds the era's schemas), once per process,
 * and the client closed afterwards, with nothing left running and no
 * rejection unhandled.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/fixtures.js';

const warmupModule = pathToFileURL(resolve(repoRoot, 'dist/src/connection/schema-warmup.js')).href;

describe('warming the SDK 2025 schemas', () => {
  it('sends one initialize through the SDK, once per process, closes its client, and leaves nothing running', async () => {
    const script = `
      const { Client } = await import('@modelcontextprotocol/client');
      const seen = { requests: [], closed: 0 };
      const request = Client.prototype.request;
      Client.prototype.request = function (req, ...rest) { seen.requests.push(req.method); return request.call(this, req, ...rest); };
      const close = Client.prototype.close;
      Client.prototype.close = function () { seen.closed++; return close.call(this); };
      process.on('unhandledRejection', (err) => { console.error('unhandled', err); process.exitCode = 3; });
      process.on('exit', () => console.log(JSON.stringify(seen)));
      const { warmLegacySchemas } = await import(${JSON.stringify(warmupModule)});
      warmLegacySchemas();
      warmLegacySchemas();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    // Bounds a process that something keeps alive.
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => child.once('exit', (c, s) => done([c, s])));
    clearTimeout(killer);
    expect(signal).toBeNull();
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const seen = JSON.parse(stdout) as { requests: string[]; closed: number };
    expect(seen.requests).toEqual(['initialize']);
    // Ours, and the SDK's own when the handshake then fails on the closed pair.
    expect(seen.closed).toBeGreaterThanOrEqual(1);
  }, 20_000);
});
