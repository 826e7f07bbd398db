/**
 * The CLI's side of the daemon: how a shim's request becomes a workspace
 * (the same options and checks as `serve --stdio`), and the `daemon` verb's
 * run. Loaded only when `daemon` runs.
 */
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { createMcpController } from '../controller/controller.js';
import { describeReason, shellQuote } from '../controller/messages.js';
import { formatIssue } from '../config/sources.js';
import { connectDaemon, controlHello, DAEMON_IDLE_TIMEOUT_MS, greet, startDaemon, type DaemonWorkspace, type ResolvedSession, type SessionRequest } from '../daemon/index.js';
import { describeError } from '../errors.js';
import { GatewayPool } from '../gateway/pool.js';
import { gatewayControllerOptions } from '../gateway/controller-options.js';
import { parseTimeoutMs, type CliContext } from './command.js';
import { controllerOptionsFor } from './controller-session.js';
import { cliBuild, cliDaemonPaths, globalOf } from './daemon-link.js';
import { untilStopped } from './until-stopped.js';
import { parseServeArgs, type ServeArgs } from './commands/serve.js';
import { DAEMON_IDLE_ENV } from '../daemon/protocol.js';

/**
 * The workspace key of a session: everything that shapes its controller and
 * pool (not its scope, call timeout or environment: sessions differing only
 * in those share one workspace).
 */
function workspaceKeyOf(ctx: CliContext, args: ServeArgs): string {
  const g = ctx.global;
  const shape = {
    root: g.root,
    preset: g.preset.name,
    configFiles: g.configFiles,
    userConfig: g.userConfig ?? null,
    format: g.format ?? null,
    approvals: g.approvalsPath,
    inputs: g.inputsPath ?? null,
    allowed: g.cliAllowedServerNames ?? null,
    lazy: args.lazy,
    idleTimeoutMs: args.idleTimeoutMs ?? null,
    separator: args.separator ?? null,
    exposure: args.exposure ?? null,
  };
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
}

/** The controller and pool of one workspace, set up like `serve`'s. */
function createWorkspace(ctx: CliContext, args: ServeArgs, log: (line: string) => void): DaemonWorkspace {
  let pool: GatewayPool | undefined;
  const { options, cleanup } = controllerOptionsFor(ctx, {
    watch: true,
    ...gatewayControllerOptions(args, () => pool, 'the daemon'),
  });
  const controller = createMcpController(options);
  const where = ctx.global.root;
  controller.on('config-error', (e) => {
    for (const issue of e.issues) log(`${where}: config: ${formatIssue(issue)}`);
  });
  controller.on('pending-approval', (e) => {
    for (const name of e.servers) log(`${where}: "${name}" is waiting for approval; it starts once you run: mcp-reconciler approve ${shellQuote(name)} --cwd ${shellQuote(where)}`);
  });
  controller.on('server-state', (e) => {
    if (e.state === 'failed' || e.state === 'needs_auth') {
      const row = controller.status().find((s) => s.name === e.name);
      log(`${where}: "${e.name}" ${describeReason(e.state)}${row?.lastError ? `: ${row.lastError}` : ''}`);
    }
  });
  pool = new GatewayPool(controller, { onError: (m) => log(`${where}: ${m}`), ...(args.separator !== undefined ? { separator: args.separator } : {}) });
  void pool.start();
  const own = pool;
  return {
    controller,
    pool: own,
    dispose: async () => {
      own.close();
      await controller.dispose();
      cleanup();
    },
  };
}

/** A shim's request as the daemon sees it: the same checks and options as `serve --stdio`. */
function resolveSession(request: SessionRequest, log: (line: string) => void): ResolvedSession {
  const sink = { write: (text: string) => log(text.trimEnd()) };
  const ctx: CliContext = {
    io: { stdout: sink, stderr: sink, env: request.env, cwd: request.cwd, stdin: new PassThrough() },
    global: globalOf(request),
    values: request.values as CliContext['values'],
    positionals: [],
  };
  const args = parseServeArgs(ctx);
  return {
    key: workspaceKeyOf(ctx, args),
    root: ctx.global.root,
    scope: args.scope,
    ...(args.callTimeoutMs !== undefined ? { callTimeoutMs: args.callTimeoutMs } : {}),
    create: async () => createWorkspace(ctx, args, log),
  };
}

function idleTimeoutOf(ctx: CliContext): number {
  const given = parseTimeoutMs(ctx.values, 'idle-timeout');
  if (given !== undefined) return given;
  const env = ctx.io.env[DAEMON_IDLE_ENV]?.trim();
  return env && /^\d+$/.test(env) && Number(env) >= 1 ? Number(env) : DAEMON_IDLE_TIMEOUT_MS;
}

async function stop(ctx: CliContext): Promise<number> {
  const paths = cliDaemonPaths(ctx.io.env);
  let socket;
  try {
    socket = await connectDaemon(paths);
  } catch {
    ctx.io.stdout.write(`no daemon of this build is running (${paths.socket})\n`);
    return 0;
  }
  const welcome = await greet(socket, controlHello(cliBuild().id, 'stop'));
  socket.destroy();
  ctx.io.stdout.write(`stopped the daemon (pid ${welcome.pid})\n`);
  return 0;
}

/** `daemon`'s run: `--stop`, or the daemon in the foreground until idle, `--stop` or a signal. */
export async function runDaemon(ctx: CliContext): Promise<number> {
  if (ctx.values.stop === true) return stop(ctx);
  const paths = cliDaemonPaths(ctx.io.env);
  const log = (line: string): void => void ctx.io.stderr.write(`${new Date().toISOString()} mcp-reconciler daemon: ${line}\n`);
  const session = untilStopped(ctx);
  const daemon = await startDaemon({
    paths,
    build: cliBuild(),
    idleTimeoutMs: idleTimeoutOf(ctx),
    resolve: (request) => resolveSession(request, log),
    log,
  });
  if (!daemon) {
    session.release();
    log(`a daemon of this build already runs on ${paths.socket}`);
    return 0;
  }
  try {
    await Promise.race([session.done, daemon.closed]);
  } finally {
    session.release();
    await daemon.close().catch((err: unknown) => log(`closing: ${describeError(err)}`));
  }
  log('stopped');
  return 0;
}

