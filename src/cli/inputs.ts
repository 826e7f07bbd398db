/**
 * The CLI's answer to `resolveInput` (docs/presets.md): VS Code `${input:id}` and
 * host variables such as `${CLAUDE_PLUGIN_ROOT}`. An answer remembered for
 * this workspace is used; otherwise, on a terminal, the user is asked once
 * and the answer is remembered (`--inputs FILE`, default
 * `~/.config/mcp-reconciler/inputs.json`, mode 0600). A `password` input is
 * read without echo and never printed. Without a terminal nothing is asked:
 * `MCP_RECONCILER_INPUT_<ID>` answers, else the server is skipped with an
 * issue saying so.
 */
import type { InputResolver, InputSpec } from '../config/load.js';
import { canonicalRoot } from '../approvals/store.js';
import { defaultInputsPath, InputStore } from '../config/input-store.js';
import type { CliIo, GlobalOptions } from './command.js';
import { LineReader, type Stdin } from './line-reader.js';

/** VS Code `pickString` options: strings, or `{ label?, value }`. */
function optionValues(spec: InputSpec): string[] {
  return (spec.options ?? [])
    .map((o) => (typeof o === 'string' ? o : o && typeof o === 'object' && typeof (o as { value?: unknown }).value === 'string' ? (o as { value: string }).value : undefined))
    .filter((o): o is string => o !== undefined);
}

/** The variable an answer is stored under: `input:id`, or the host variable's name. */
function variableOf(id: string, spec: InputSpec): string {
  return spec.type === 'hostVariable' ? id : `input:${id}`;
}

/** Options of {@link cliInputResolver}. */
export interface CliInputResolverOptions {
  /** Ask on the terminal when nothing is remembered (only when stdin and stdout are a terminal). */
  prompt: boolean;
}

/** Whether this run may ask on the terminal. */
export function canPrompt(io: CliIo): boolean {
  return io.isTTY === true && io.stdin !== undefined;
}

/**
 * The CLI's `resolveInput`: a remembered answer, else (with `prompt` on a
 * terminal) the user's, which is then remembered. Questions go to stderr,
 * one at a time. Never throws; problems with the store are said once on stderr.
 */
export function cliInputResolver(g: GlobalOptions, io: CliIo, options: CliInputResolverOptions): InputResolver {
  const store = new InputStore(g.inputsPath ?? defaultInputsPath(io.env));
  const root = canonicalRoot(g.root);
  const reader = canPrompt(io) ? new LineReader(io.stdin as Stdin) : undefined;
  const declined = new Set<string>();
  const warned = new Set<string>();
  let cancelled = false;
  let chain: Promise<unknown> = Promise.resolve();
  const warn = (message: string): void => {
    if (warned.has(message)) return;
    warned.add(message);
    io.stderr.write(`warning: ${message}\n`);
  };

  const ask = async (id: string, spec: InputSpec): Promise<string | undefined> => {
    const hostVar = spec.type === 'hostVariable';
    const picks = spec.type === 'pickString' ? optionValues(spec) : [];
    const what = hostVar ? `\${${id}}, which the host sets itself (the folder it means)` : `input "${id}"${spec.description ? ` (${spec.description})` : ''}`;
    io.stderr.write(`${spec.file} needs ${what}; the answer is remembered for this workspace in ${store.path}\n`);
    if (picks.length > 0) picks.forEach((p, i) => io.stderr.write(`  ${i + 1}) ${p}\n`));
    const suffix = spec.default !== undefined && !spec.password ? ` [${spec.default}]` : '';
    for (let attempt = 0; attempt < 3; attempt++) {
      const line = await reader!.read(spec.password === true, () => io.stderr.write(`${id}${spec.password ? ' (typing is hidden)' : ''}${suffix}: `));
      if (spec.password) io.stderr.write('\n');
      if (line === undefined) {
        cancelled = true;
        io.stderr.write('cancelled: no more questions in this run\n');
        return undefined;
      }
      const answer = line === '' ? spec.default ?? '' : line;
      if (picks.length === 0) return answer === '' ? undefined : answer;
      const n = /^\d+$/.test(answer) ? Number(answer) : NaN;
      if (n >= 1 && n <= picks.length) return picks[n - 1];
      if (picks.includes(answer)) return answer;
      io.stderr.write(`pick a number from 1 to ${picks.length}\n`);
    }
    return undefined;
  };

  return (id, spec) => {
    const run = chain.then(async (): Promise<string | undefined> => {
      const variable = variableOf(id, spec);
      const key = await root;
      const stored = await store.get(key, variable);
      if (stored.error !== undefined) warn(stored.error);
      if (stored.value !== undefined) return stored.value;
      if (!options.prompt || reader === undefined || cancelled || declined.has(variable)) return undefined;
      const answer = await ask(id, spec);
      if (answer === undefined) {
        declined.add(variable);
        if (!cancelled) io.stderr.write(`no answer: servers that need \${${variable}} are skipped\n`);
        return undefined;
      }
      await store.set(key, variable, answer).catch((err: unknown) => warn(`the answer is used now but not remembered: ${(err as Error).message}`));
      return answer;
    });
    chain = run.catch(() => undefined);
    return run;
  };
}
