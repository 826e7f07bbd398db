/**
 * `--help` for the program and for every verb: what a newcomer types first.
 * Every verb shows its usage, its options and examples that start with the
 * program's name and name the verb itself.
 *
 * Help and parsing come from one declaration per argument (src/cli/args.ts);
 * the drift tests below read the printed help back and check it against what
 * actually parses, in both directions.
 */
import { describe, expect, it } from 'vitest';
import type { CliCommand, CliOptions } from '../../src/cli/command.js';
import { commands } from '../../src/cli/commands/index.js';
import { GLOBAL_OPTIONS, runCli } from '../../src/cli/main.js';
import { runCliCaptured, type CliRun } from '../helpers/cli.js';

const run = (argv: string[]) => runCliCaptured(argv, process.env, process.cwd());
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The lines of one `Title:` section of a help text, without the indent. */
function section(help: string, title: string): string[] {
  const body = help.split(`\n${title}:\n`)[1]?.split('\n\n')[0]?.trimEnd();
  return body === undefined ? [] : body.split('\n').map((l) => l.replace(/^ {2}/, ''));
}

/** An option line as printed: `-h, --help   text` or `--timeout MS   text`. */
interface Shown {
  short?: string;
  name: string;
  value?: string;
  text: string;
}

function shownOptions(lines: readonly string[]): Shown[] {
  return lines.map((line) => {
    const m = /^(?:-(\w), )?--([\w-]+)(?: (\S+))? {3,}(\S.*)$/.exec(line);
    expect(m, `option line ${JSON.stringify(line)}`).not.toBeNull();
    return { ...(m![1] ? { short: m![1] } : {}), name: m![2]!, ...(m![3] ? { value: m![3] } : {}), text: m![4]! };
  });
}

/** Run `argv` with every command's `run` replaced, so nothing starts: usage handling only. */
async function dryRun(argv: string[]): Promise<CliRun & { ran?: string[] }> {
  let stdout = '';
  let stderr = '';
  let ran: string[] | undefined;
  const stubs: CliCommand[] = commands.map((c) => ({
    ...c,
    run: async (ctx) => {
      ran = ctx.positionals;
      return 0;
    },
  }));
  const code = await runCli(argv, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: process.env, cwd: process.cwd() }, stubs);
  return { code, stdout, stderr, ...(ran ? { ran } : {}) };
}

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

describe('help and parsing cannot drift', () => {
  /** Every option `help` prints for `argv`, checked against `declared` both ways. */
  async function checkOptions(helpArgv: string[], title: string, declared: CliOptions, parseArgv: (flag: string) => string[]): Promise<void> {
    const help = (await run(helpArgv)).stdout;
    const shown = shownOptions(section(help, title));
    // Every declared option is shown, as it parses: a value name exactly for value options.
    expect(shown.map((s) => s.name).sort()).toEqual(Object.keys(declared).sort());
    for (const s of shown) {
      const d = declared[s.name]!;
      expect(s.value, `--${s.name} value name`).toBe(d.type === 'string' ? d.value : undefined);
      expect(s.short, `--${s.name} short form`).toBe(d.short);
      expect(s.text, `--${s.name} help`).toContain(d.help);
      for (const alias of d.aliases ?? []) expect(s.text).toContain(`--${alias}`);
    }
    // Every option shown parses the way help shows it. `--help` comes first so nothing runs;
    // a value option gets `=VALUE` (a switch refuses one) and a switch comes last (a value
    // option there would miss its value): a wrong type either way is a usage error, exit 2.
    const forms = shown.flatMap((s) => {
      const names = [`--${s.name}`, ...(s.short ? [`-${s.short}`] : []), ...(declared[s.name]!.aliases ?? []).map((a) => `--${a}`)];
      return names.map((n) => (s.value === undefined || n.length === 2 ? n : `${n}=${s.value}`));
    });
    for (const flag of forms) {
      const r = await run(parseArgv(flag));
      expect({ flag, code: r.code, stderr: r.stderr }).toEqual({ flag, code: 0, stderr: '' });
    }
  }

  it.each(commands.map((c) => [c.name, c] as const))('%s: every declared option is in its --help and every option in its --help parses', async (name, c) => {
    await checkOptions([name, '--help'], 'Options', c.options ?? {}, (flag) => [name, '--help', flag]);
    await checkOptions([name, '--help'], 'Global options', GLOBAL_OPTIONS, (flag) => [name, '--help', flag]);
  });

  it('the program’s --help shows the same global options, and they parse', async () => {
    await checkOptions(['--help'], 'Global options', GLOBAL_OPTIONS, (flag) => ['config', '--help', flag]);
  });

  it.each(commands.map((c) => [c.name, c] as const))('%s: the usage line and Arguments show the declared positionals in order', async (name, c) => {
    const help = (await run([name, '--help'])).stdout;
    const declared = c.positionals ?? [];
    const syntax = declared.map((p) => (p.arity === 'required' ? p.name : p.arity === 'optional' ? `[${p.name}]` : `[${p.name}...]`));
    expect(help.split('\n')[0]).toBe(['Usage: mcp-reconciler', name, ...syntax, '[options]'].join(' '));
    const shown = section(help, 'Arguments').map((l) => /^(\S+) {3,}(\S.*)$/.exec(l)!);
    expect(shown.map((m) => m[1])).toEqual(declared.map((p) => p.name));
    shown.forEach((m, i) => expect(m[2]).toBe(declared[i]!.help));
    const general = (await run(['--help'])).stdout;
    expect(general).toMatch(new RegExp(`^  ${escape([name, ...syntax].join(' '))} {3,}${escape(c.summary)}$`, 'm'));
  });

  it('declarations are well formed: positionals required → optional → one variadic last; options do not clash', () => {
    const rank = { required: 0, optional: 1, variadic: 2 } as const;
    const types = new Map<string, string>(Object.entries(GLOBAL_OPTIONS).map(([n, o]) => [n, o.type]));
    for (const c of commands) {
      const ranks = (c.positionals ?? []).map((p) => rank[p.arity]);
      expect(ranks, c.name).toEqual([...ranks].sort());
      expect(ranks.filter((r) => r === 2).length, c.name).toBeLessThanOrEqual(1);
      for (const [name, o] of Object.entries(c.options ?? {})) {
        expect(Object.hasOwn(GLOBAL_OPTIONS, name), `${c.name} --${name} shadows a global option`).toBe(false);
        // The first pass parses every command's options together to find the verb: one type per name.
        expect(types.get(name) ?? o.type, `${c.name} --${name} type`).toBe(o.type);
        types.set(name, o.type);
      }
    }
  });
});

describe('positional counts are checked before a command runs', () => {
  it.each(commands.map((c) => [c.name, c] as const))('%s: too few or too many arguments exit 2, say what is wrong and where help is', async (name, c) => {
    const declared = c.positionals ?? [];
    const required = declared.filter((p) => p.arity === 'required');
    const exact = required.map((p) => `arg-${p.name.toLowerCase()}`);
    const ok = await dryRun([name, ...exact]);
    expect(ok).toMatchObject({ code: 0, stderr: '', ran: exact });

    const hint = `hint: usage: mcp-reconciler ${name}`;
    if (required.length > 0) {
      const few = await dryRun([name]);
      expect(few.ran).toBeUndefined();
      expect(few.code).toBe(2);
      expect(few.stderr).toContain(`error: ${name} needs ${required.map((p) => p.name).join(' and ')}, but no arguments were given\n`);
      expect(few.stderr).toContain(hint);
      expect(few.stderr).toContain(`see \`mcp-reconciler ${name} --help\``);
    }
    if (!declared.some((p) => p.arity === 'variadic')) {
      const many = await dryRun([name, ...declared.map((p) => p.name.toLowerCase()), 'extra']);
      expect(many.ran).toBeUndefined();
      expect(many.code).toBe(2);
      expect(many.stderr).toMatch(new RegExp(`^error: ${name} takes (no arguments|at most \\d+ arguments? \\(.*\\)), but got \\d+ arguments?: .*"extra"\\n`));
      expect(many.stderr).toContain(`see \`mcp-reconciler ${name} --help\``);
    }
  });

  it('names the missing and the extra arguments', async () => {
    const call = await dryRun(['call', 'mcp__a__b', '{}', 'more']);
    expect(call.stderr).toBe(
      'error: call takes at most 2 arguments (TOOL [JSON_ARGS]), but got 3 arguments: "mcp__a__b" "{}" "more"\n' +
        'hint: usage: mcp-reconciler call TOOL [JSON_ARGS] [options]; see `mcp-reconciler call --help`\n',
    );
    const config = await dryRun(['config', 'extra-arg']);
    expect(config.stderr).toMatch(/^error: config takes no arguments, but got 1 argument: "extra-arg"\nhint: usage: mcp-reconciler config \[options\]; see `mcp-reconciler config --help`\n$/);
    const approve = await dryRun(['approve', '--session']);
    expect(approve.stderr).toMatch(/^error: approve needs SERVER, but no arguments were given\n/);
    // Positionals after `--` count too: a name that looks like an option is still a name.
    const dashed = await dryRun(['approve', '--', '--session']);
    expect(dashed).toMatchObject({ code: 0, ran: ['--session'] });
  });
});
