import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcilerMachine } from '../../machines/reconciler.machine.js';
import { serverMachine } from '../../machines/server.machine.js';
import { vizCommand } from '../../src/cli/commands/viz.js';
import { runCli } from '../../src/cli/main.js';
import { renderChart } from '../../src/viz/index.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-viz-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function viz(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['viz', ...argv], { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: { PATH: process.env.PATH }, cwd: dir }, [vizCommand]);
  return { code, stdout, stderr };
}

describe('mcp-reconciler viz', () => {
  it('prints the server machine as Mermaid by default', async () => {
    const r = await viz();
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(await renderChart(serverMachine, 'mermaid'));
  });

  it('prints each format for each machine', async () => {
    for (const [name, machine] of [['server', serverMachine], ['reconciler', reconcilerMachine]] as const) {
      for (const format of ['mermaid', 'dot', 'json', 'svg'] as const) {
        const r = await viz(name, '--format', format);
        expect(r.code, `${name} ${format}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toBe(await renderChart(machine, format));
      }
    }
  });

  it('writes --out relative to the working directory and says so on stderr', async () => {
    const r = await viz('reconciler', '--format', 'dot', '--out', 'chart.dot');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(join(dir, 'chart.dot'));
    expect(await readFile(join(dir, 'chart.dot'), 'utf8')).toBe(await renderChart(reconcilerMachine, 'dot'));
  });

  it('honours --detail for dot', async () => {
    const r = await viz('server', '--format', 'dot', '--detail', 'outline');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(await renderChart(serverMachine, 'dot', { detail: 'outline' }));
    expect(r.stdout).not.toBe(await renderChart(serverMachine, 'dot'));
  });

  it('answers usage errors with exit code 2 and a hint', async () => {
    for (const argv of [['nope'], ['--format', 'png'], ['server', 'reconciler'], ['--detail', 'all'], ['--bogus']]) {
      const r = await viz(...argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^error: /);
      expect(r.stdout).toBe('');
    }
    const r = await viz('--format', 'png');
    expect(r.stderr).toContain('hint: use one of: mermaid, dot, svg, json');
  });

  it('fails with exit code 1 when --out cannot be written', async () => {
    const r = await viz('--out', join(dir, 'missing-dir', 'x.mmd'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot write');
  });
});
