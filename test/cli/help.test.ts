/**
 * `--help` for the program and for every verb: what a newcomer types first.
 * Every verb shows its usage, its options and examples that start with the
 * program's name and name the verb itself.
 */
import { describe, expect, it } from 'vitest';
import { commands } from '../../src/cli/commands/index.js';
import { runCliCaptured } from '../helpers/cli.js';

const run = (argv: string[]) => runCliCaptured(argv, process.env, process.cwd());

describe('--help', () => {
  it('lists every command and says how to get a command’s own help', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const c of commands) expect(r.stdout).toContain(`  ${c.name}`);
    expect(r.stdout).toMatch(/mcp-reconciler <command> --help/);
  });

  it.each(commands.map((c) => [c.name]))('%s --help shows usage and examples of that verb, and exits 0', async (name) => {
    const r = await run([name, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Usage: mcp-reconciler ${name}\\b`));
    const examples = r.stdout.split('Examples:\n')[1]?.split('\n\n')[0]?.split('\n') ?? [];
    expect(examples.length, `${name} has examples`).toBeGreaterThan(0);
    for (const line of examples) expect(line.trim().startsWith(`mcp-reconciler ${name}`), line).toBe(true);
  });
});
