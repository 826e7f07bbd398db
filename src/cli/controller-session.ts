import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createMcpController, type McpController } from '../controller/controller.js';
import type { McpControllerOptions } from '../controller/types.js';
import type { CliContext } from './command.js';
import { INLINE_SOURCE_PATH, isInlineConfig } from '../config/reader.js';
import { canPrompt, cliInputResolver } from './inputs.js';
import { cliSources, loadWorkspace } from './workspace.js';

/**
 * Controller options for a CLI run: the same sources `config` reads (inline
 * `--config` JSON is written to a private temp file so the controller can
 * read and watch it like any other).
 */
export function controllerOptionsFor(ctx: CliContext, extra: Partial<McpControllerOptions> = {}): { options: McpControllerOptions; cleanup: () => void } {
  const { global: g, io } = ctx;
  const inline = g.configFiles.filter(isInlineConfig);
  let dir: string | undefined;
  let nextInline = 0;
  const sources = cliSources(g, io.env).map((s) => {
    if (s.path !== INLINE_SOURCE_PATH) return s;
    dir ??= mkdtempSync(path.join(tmpdir(), 'mcp-reconciler-inline-'));
    const file = path.join(dir, `inline-${nextInline}.json`);
    writeFileSync(file, inline[nextInline++]!, { mode: 0o600 });
    return { ...s, path: file };
  });
  const debug = io.env.MCP_RECONCILER_DEBUG === '1';
  const concurrency = connectConcurrencyOf(io.env);
  const options: McpControllerOptions = {
    cwd: g.root,
    sources,
    approvals: g.approvalsPath,
    env: io.env,
    // Remembered answers only: questions are asked before the controller starts (askForInputs).
    resolveInput: cliInputResolver(g, io, { prompt: false }),
    ...(g.cliAllowedServerNames ? { cliAllowedServerNames: g.cliAllowedServerNames } : {}),
    ...(g.profile !== undefined ? { profile: g.profile } : {}),
    ...(concurrency !== undefined ? { connectConcurrency: concurrency } : {}),
    logger: {
      warn: (m) => debug && io.stderr.write(`warn: ${m}\n`),
      error: (m) => debug && io.stderr.write(`error: ${m}\n`),
      ...(debug ? { debug: (m: string) => io.stderr.write(`debug: ${m}\n`) } : {}),
    },
    ...extra,
  };
  return { options, cleanup: () => dir && rmSync(dir, { recursive: true, force: true }) };
}

/**
 * `MCP_RECONCILER_CONNECT_CONCURRENCY`: how many servers start at once (a
 * fixed limit; unset, the controller adapts its own). Anything but a whole
 * number from 1 up is ignored.
 */
function connectConcurrencyOf(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.MCP_RECONCILER_CONNECT_CONCURRENCY?.trim();
  const n = raw && /^\d+$/.test(raw) ? Number(raw) : NaN;
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/**
 * On a terminal, ask for the inputs the config files need and nobody answered
 * yet, before a controller starts (its reloads only read remembered answers,
 * so no question ever interrupts a running view). Without a terminal, nothing.
 */
export async function askForInputs(ctx: CliContext): Promise<void> {
  if (canPrompt(ctx.io)) await loadWorkspace(ctx.global, ctx.io);
}

/** Start a controller for a one-shot command, run `fn`, and always dispose it. */
export async function withController<T>(
  ctx: CliContext,
  fn: (c: McpController) => Promise<T>,
  extra: Partial<McpControllerOptions> = {},
  beforeStart?: (c: McpController) => void,
): Promise<T> {
  await askForInputs(ctx);
  const { options, cleanup } = controllerOptionsFor(ctx, { watch: false, ...extra });
  const controller = createMcpController(options);
  try {
    beforeStart?.(controller);
    await controller.start();
    return await fn(controller);
  } finally {
    await controller.dispose();
    cleanup();
  }
}
