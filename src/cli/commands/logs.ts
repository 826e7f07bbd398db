import { access } from 'node:fs/promises';
import { canonicalRoot } from '../../approvals/store.js';
import { defaultLogDir, logFile, readServerLog, type LogRecord } from '../../controller/server-logs.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { serverPositional, type CliCommand, type CliContext } from '../command.js';
import { LOG_LEVELS, type LogLevel } from '../../../machines/types.js';
import { untilStopped } from '../until-stopped.js';

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: a duration back from now (`90s`, `10m`, `2h`, `1d`) or an ISO time. */
export function parseSince(value: string, now = Date.now()): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value.trim());
  if (m) return now - Number(m[1]) * UNITS[m[2]!]!;
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(at)) {
    throw new McpReconcilerError(ErrorCode.Usage, `--since ${JSON.stringify(value)} is not a duration or a time`, {
      hint: 'e.g. --since 10m, --since 2h, --since 2026-12-01T09:00:00Z',
    });
  }
  return at;
}

/** `--level`: an MCP log level. */
function parseLevel(value: string): LogLevel {
  const level = value.trim().toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogLevel;
  throw new McpReconcilerError(ErrorCode.Usage, `--level ${JSON.stringify(value)} is not an MCP log level`, { hint: `use one of ${LOG_LEVELS.join(', ')}` });
}

/** One record as a terminal line (the CLI's output filter neutralises escape sequences in it). */
function line(r: LogRecord): string {
  const what = r.source === 'mcp' ? `log:${r.level ?? 'info'}${r.logger ? ` ${r.logger}` : ''}` : r.source === 'supervisor' && r.level && r.level !== 'info' ? `supervisor:${r.level}` : r.source;
  return `${r.time} ${what}  ${r.text}`;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function run(ctx: CliContext): Promise<number> {
  const [server] = ctx.positionals as [string];
  const since = typeof ctx.values.since === 'string' ? parseSince(ctx.values.since) : undefined;
  const follow = ctx.values.follow === true;
  const level = typeof ctx.values.level === 'string' ? parseLevel(ctx.values.level) : undefined;
  const dir = defaultLogDir(await canonicalRoot(ctx.global.root), ctx.io.env);
  const file = logFile(dir, server);
  if (!follow && !(await exists(file)) && !(await exists(`${file}.1`))) {
    throw new McpReconcilerError(ErrorCode.UnknownServer, `no log of "${server}" for ${ctx.global.root} (looked for ${file})`, {
      hint: 'a server gets a log once mcp-reconciler runs it in this workspace (watch, serve, status, call); check the name with `mcp-reconciler status`, or use -f to wait for it',
      details: { server, file },
    });
  }
  const stop = follow ? untilStopped(ctx) : undefined;
  const abort = new AbortController();
  void stop?.done.then(() => abort.abort());
  try {
    for await (const r of readServerLog(dir, server, { ...(since !== undefined ? { since } : {}), ...(level !== undefined ? { level } : {}), follow, signal: abort.signal })) {
      ctx.io.stdout.write(`${ctx.global.json ? JSON.stringify(r) : line(r)}\n`);
    }
  } finally {
    stop?.release();
  }
  return 0;
}

/** `logs NAME [-f] [--since DURATION] [--level LEVEL]`: a server's stderr, MCP log messages and supervisor lines. */
export const logsCommand: CliCommand = {
  name: 'logs',
  summary: "a server's log: its stderr, the MCP log messages it sent, and the supervisor's restarts and errors",
  examples: [
    'mcp-reconciler logs github                  # everything kept (up to 2 MiB per server)',
    'mcp-reconciler logs github -f --since 10m   # the last ten minutes, then new lines as they come (Ctrl-C ends)',
    'mcp-reconciler logs github --json           # one JSON record per line: time, source, level, text',
    'mcp-reconciler logs github --level warning  # warnings and worse (and stderr)',
  ],
  positionals: [serverPositional('a server of this workspace')],
  options: {
    follow: { type: 'boolean', short: 'f', help: 'keep printing new lines until Ctrl-C' },
    since: { type: 'string', value: 'DURATION', help: 'only lines from this long ago (90s, 10m, 2h, 1d) or since an ISO time' },
    level: { type: 'string', value: 'LEVEL', help: `only MCP log messages and supervisor lines at this level or above (${LOG_LEVELS.join(', ')}); stderr lines are always shown` },
  },
  run,
};
