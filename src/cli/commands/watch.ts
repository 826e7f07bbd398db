import { emitKeypressEvents } from 'node:readline';
import { createInterface } from 'node:readline';
import { canonicalRoot } from '../../approvals/store.js';
import { createMcpController, type McpController } from '../../controller/controller.js';
import { describeReason, fixFor } from '../../controller/messages.js';
import type { McpControllerEvents } from '../../controller/types.js';
import { formatIssue } from '../../config/sources.js';
import { ErrorCode, McpReconcilerError, describeError } from '../../errors.js';
import type { CliCommand, CliContext } from '../command.js';
import { askForInputs, controllerOptionsFor } from '../controller-session.js';
import { terminalSafe, writeRaw } from '../output.js';
import { requestChannelPath, serveRequests, type ChannelRequest, type RequestResult, type RequestServer } from '../request-channel.js';
import { statusTable } from './status.js';
import { untilStopped } from '../until-stopped.js';
import { getOwn } from '../../util/own.js';

const EVENTS = ['server-state', 'tools-changed', 'pending-approval', 'config-error', 'reconciled'] as const;


/** Machine-readable mode: one JSON object per line for every event; commands read from stdin lines. */
function ndjson(ctx: CliContext, c: McpController, stop: () => void): () => void {
  const write = (event: string, payload: object): void => {
    ctx.io.stdout.write(`${JSON.stringify({ event, at: new Date().toISOString(), ...payload })}\n`);
  };
  const offs = EVENTS.map((e) => c.on(e, (p: McpControllerEvents[typeof e]) => write(e, p as object)));
  let rl: ReturnType<typeof createInterface> | undefined;
  if (ctx.io.stdin) {
    rl = createInterface({ input: ctx.io.stdin, terminal: false });
    rl.on('line', (line) => {
      void runLine(c, line.trim())
        .then((r) => r && write('command', r))
        .catch((err) => write('command', { line, ok: false, error: describeError(err) }));
    });
    // stdin closing is not a reason to stop: hosts often start us with no stdin.
  }
  return () => {
    for (const off of offs) off();
    rl?.close();
  };
  function runLine(ctl: McpController, line: string): Promise<object | undefined> {
    const [verb, ...args] = line.split(/\s+/);
    const session = args.includes('--session');
    const name = args.find((a) => a !== '--session');
    switch (verb) {
      case '':
      case undefined:
        return Promise.resolve(undefined);
      case 'status':
        return Promise.resolve({ line, ok: true, status: ctl.status() });
      case 'quit':
        stop();
        return Promise.resolve({ line, ok: true });
      case 'approve':
        return ctl.approve(name ?? '', { persist: !session }).then(() => ({ line, ok: true }));
      case 'reject':
        return ctl.reject(name ?? '').then(() => ({ line, ok: true }));
      case 'reconnect':
        return ctl.reconnect(name ?? '').then(() => ({ line, ok: true }));
      case 'reload':
        return ctl.reload().then(() => ({ line, ok: true }));
      default:
        return Promise.resolve({ line, ok: false, error: `unknown command "${verb}"; use approve [--session] NAME, reject NAME, reconnect NAME, reload, status, quit` });
    }
  }
}

/** Terminal mode: a live table, a short event feed, and one approval question at a time. */
function terminal(ctx: CliContext, c: McpController, stop: () => void): { detach: () => void; log: (line: string) => void } {
  const { io, global: g } = ctx;
  const feed: string[] = [];
  const queue: string[] = [];
  const deferred = new Set<string>();
  let busy = false;
  let timer: NodeJS.Timeout | undefined;
  const log = (line: string): void => {
    feed.push(`${new Date().toLocaleTimeString()}  ${line}`);
    if (feed.length > 8) feed.shift();
    schedule();
  };
  const current = (): string | undefined => queue[0];
  const render = (): void => {
    timer = undefined;
    const rows = c.status();
    // A question answered elsewhere (approve from another terminal, the dashboard) is not asked again.
    while (queue.length > 0 && rows.find((r) => r.name === queue[0])?.state !== 'pending_approval') queue.shift();
    const out = ['\x1b[H\x1b[2J', `mcp-reconciler watch — ${g.root}   (Ctrl-C to stop)`, '', statusTable(rows, g.root, g.home), ''];
    if (feed.length > 0) out.push('recent:', ...feed.map((l) => `  ${l}`), '');
    const ask = current();
    if (ask) {
      const row = rows.find((r) => r.name === ask);
      out.push(`Approve MCP server "${ask}" from ${row?.source ?? 'a project file'}?  [a]pprove  [s]ession only  [r]eject  [l]ater`);
    }
    // Only our own screen clear goes out raw; names, errors and config text are escaped (terminalSafe).
    writeRaw(io.stdout, `${out[0]}\n${terminalSafe(out.slice(1).join('\n'))}\n`);
  };
  const schedule = (): void => {
    timer ??= setTimeout(render, 50);
  };
  const offs = [
    c.on('client-update', schedule),
    c.on('server-state', (e) => log(`${e.name}: ${e.previous ?? 'new'} → ${e.state === e.previous ? e.path : e.state}${e.reason ? ` (${e.reason})` : ''}`)),
    c.on('tools-changed', (e) => log(`${e.server}: +${e.added.length} -${e.removed.length} tools`)),
    c.on('config-error', (e) => e.issues.forEach((i) => log(`config: ${formatIssue(i)}`))),
    c.on('pending-approval', (e) => {
      for (const s of e.servers) if (!queue.includes(s) && !deferred.has(s)) queue.push(s);
      schedule();
    }),
  ];
  const stdin = io.stdin;
  const onKey = (_: string, key: { name?: string; ctrl?: boolean } | undefined): void => {
    if (!key) return;
    if (key.ctrl && key.name === 'c') return stop();
    const ask = current();
    if (!ask || busy) return;
    const act = { a: () => c.approve(ask), s: () => c.approve(ask, { persist: false }), r: () => c.reject(ask) }[key.name ?? ''];
    if (key.name === 'l') {
      deferred.add(ask);
      queue.shift();
      return schedule();
    }
    if (!act) return;
    busy = true;
    queue.shift();
    act()
      .then(() => log(`${ask}: ${key.name === 'r' ? 'rejected' : key.name === 's' ? 'approved for this session' : 'approved'}`))
      .catch((err) => log(`${ask}: ${describeError(err)}`))
      .finally(() => {
        busy = false;
        schedule();
      });
  };
  if (stdin) {
    emitKeypressEvents(stdin);
    stdin.setRawMode?.(true);
    stdin.on('keypress', onKey);
    stdin.resume();
  }
  render();
  const detach = (): void => {
    for (const off of offs) off();
    if (timer) clearTimeout(timer);
    if (stdin) {
      stdin.off('keypress', onKey);
      stdin.setRawMode?.(false);
      stdin.pause();
    }
  };
  return { detach, log };
}

/** States a RECONNECT acts on (SPEC §10: from `failed`, `needs_auth` or while reconnecting). */
const RECONNECTABLE: ReadonlySet<string> = new Set(['failed', 'needs_auth', 'reconnecting']);

/**
 * Act on a request from another terminal (`reconnect`, `approve --session`)
 * and say what happened; throws (becoming the sender's error) when it cannot.
 */
async function handleRequest(c: McpController, req: ChannelRequest): Promise<RequestResult> {
  // A request may arrive while the first servers are still starting; names are known after that.
  await c.start();
  const name = JSON.stringify(req.server);
  if (req.verb === 'approve-session') {
    await c.approve(req.server, { persist: false });
    const hash = getOwn(c.config().desired, req.server)?.hash ?? '';
    return { ok: true, message: `approved ${name} for this watch session only (config ${hash.slice(0, 12)}); nothing was stored` };
  }
  if (req.verb === 'approve-tools') {
    const drift = c.status().find((r) => r.name === req.server)?.toolDrift;
    if (!c.approveTools(req.server)) {
      throw new McpReconcilerError(ErrorCode.Usage, `MCP server ${name} has not listed its tools in this watch yet, so there is nothing to accept`, { hint: 'wait until it is connected (`mcp-reconciler status`), then run this again' });
    }
    const what = drift ? ` (${[drift.changed.length ? `${drift.changed.length} changed` : '', drift.added.length ? `${drift.added.length} new` : ''].filter(Boolean).join(', ')})` : '';
    return { ok: true, message: `accepted the current tool definitions of ${name}${what}` };
  }
  const row = c.status().find((r) => r.name === req.server && r.state !== 'removed');
  if (!row) {
    // Throws unknown_server, listing the configured names, for a name this watch does not have.
    await c.reconnect(req.server);
    throw new McpReconcilerError(ErrorCode.UnknownServer, `MCP server ${name} has not started in this watch yet`, { hint: 'try again in a moment' });
  }
  if (RECONNECTABLE.has(row.state)) {
    await c.reconnect(req.server);
    return { ok: true, message: `reconnecting ${name} now with a fresh retry budget (it was ${row.state})` };
  }
  if (row.state === 'connected' || row.state === 'connecting' || row.state === 'fingerprint_changed') {
    // The machine ignores RECONNECT here; say so rather than pretend.
    return { ok: true, message: `${name} is ${row.state} (generation ${row.generation}); nothing to reconnect` };
  }
  throw new McpReconcilerError(
    ErrorCode.Usage,
    `MCP server ${name} ${row.reason ? describeReason(row.reason) : `is ${row.state}`}; reconnect only acts on a server that failed, needs authorisation or is reconnecting`,
    row.reason ? { hint: fixFor(row.reason, req.server) } : {},
  );
}

/** Serve the request channel for this watch and report each request in its output. */
async function serveChannel(ctx: CliContext, c: McpController, tty: boolean, log: (line: string) => void): Promise<RequestServer | undefined> {
  const root = await canonicalRoot(ctx.global.root);
  const write = (payload: object): void => {
    if (!tty) ctx.io.stdout.write(`${JSON.stringify({ event: 'request', at: new Date().toISOString(), ...payload })}\n`);
  };
  let lastError: string | undefined;
  const problem = (message: string): void => {
    if (tty) log(message);
    else ctx.io.stdout.write(`${JSON.stringify({ event: 'request-channel-error', at: new Date().toISOString(), error: message })}\n`);
  };
  try {
    return await serveRequests({
      file: requestChannelPath(ctx.global.approvalsPath, root),
      root,
      handle: async (req) => {
        const verb = req.verb === 'approve-session' ? 'approve --session' : req.verb === 'approve-tools' ? 'approve --tool-definitions' : req.verb;
        try {
          const result = await handleRequest(c, req);
          write({ verb: req.verb, server: req.server, ok: true, message: result.message });
          log(`${req.server}: ${verb} from another terminal: ${result.message}`);
          return result;
        } catch (err) {
          write({ verb: req.verb, server: req.server, ok: false, error: describeError(err) });
          log(`${req.server}: ${verb} from another terminal failed: ${describeError(err)}`);
          throw err;
        }
      },
      onError: (err) => {
        // The channel is polled every second: report a lasting problem once, not every time.
        if (err.message === lastError) return;
        lastError = err.message;
        problem(`request channel: ${err.message}`);
      },
    });
  } catch (err) {
    // Without the channel the watch still works; `reconnect` from elsewhere will say no watch runs.
    problem(`request channel unavailable (reconnect / approve --session from other terminals will not reach this watch): ${describeError(err)}`);
    return undefined;
  }
}

async function run(ctx: CliContext): Promise<number> {
  // Before the live view takes the terminal's keys.
  await askForInputs(ctx);
  const { options, cleanup } = controllerOptionsFor(ctx, { watch: true });
  const controller = createMcpController(options);
  const session = untilStopped(ctx);
  const tty = ctx.io.isTTY === true && !ctx.global.json;
  const view = tty ? terminal(ctx, controller, session.stop) : { detach: ndjson(ctx, controller, session.stop), log: () => {} };
  const detach = view.detach;
  let dashboard: { url: string; close(): Promise<void> } | undefined;
  let channel: RequestServer | undefined;
  try {
    // Before start(): a request sent while servers start is taken and answered once they settled.
    channel = await serveChannel(ctx, controller, tty, view.log);
    // Ctrl-C while servers are still starting stops now, not once they settle (up to readyTimeoutMs).
    const stoppedEarly = await Promise.race([controller.start().then(() => false), session.done.then(() => true)]);
    if (!tty && !stoppedEarly) ctx.io.stdout.write(`${JSON.stringify({ event: 'ready', at: new Date().toISOString(), status: controller.status() })}\n`);
    if (ctx.values.ui === true && !stoppedEarly) {
      const { startDashboard } = await import('../../dashboard/server.js');
      const port = ctx.values.port === undefined ? 0 : Number(ctx.values.port);
      dashboard = await startDashboard(controller, { port });
      const line = `dashboard: ${dashboard.url}`;
      if (tty) ctx.io.stderr.write(`${line}\n`);
      else ctx.io.stdout.write(`${JSON.stringify({ event: 'dashboard', url: dashboard.url })}\n`);
    }
    await session.done;
  } finally {
    session.release();
    // Unregister first, so no new request is taken by a watch that is stopping.
    await channel?.close();
    detach();
    await dashboard?.close().catch(() => undefined);
    await controller.dispose();
    cleanup();
  }
  if (!tty) ctx.io.stdout.write(`${JSON.stringify({ event: 'stopped', at: new Date().toISOString() })}\n`);
  return 0;
}

/** `watch`: run the controller, live status, approvals on the terminal, hot reload; Ctrl-C stops cleanly. */
export const watchCommand: CliCommand = {
  name: 'watch',
  examples: [
    "mcp-reconciler watch                        # live status; approve prompts; reloads on every config save",
    "mcp-reconciler watch --ui                   # the same, plus the dashboard on 127.0.0.1",
  ],
  summary: 'run the controller with hot reload, a live status view and approval prompts',
  options: {
    ui: { type: 'boolean', help: 'also serve the live dashboard on 127.0.0.1 (URL printed)' },
    port: { type: 'string', value: 'N', help: 'dashboard port (default: a free one)' },
  },
  run,
};
