/**
 * A real `redis-server` for the cluster tests: one per test file, on a unix
 * socket in a temp dir (no TCP port, nothing persisted), stopped at the end.
 * `stop()` and `start()` again on the same socket let a test take Redis away
 * and bring it back.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from './processes.js';

/** Where Debian's package installs it (`.ci/run` installs `redis-server`). */
export const REDIS_SERVER = process.env.MCPR_REDIS_SERVER ?? '/usr/bin/redis-server';

/** A redis-server the test started. */
export interface TestRedis {
  /** Path of its unix socket: what `--cluster` takes. */
  readonly socket: string;
  /** Its pid while it runs. */
  pid(): number | undefined;
  /** One command over a raw connection (RESP inline), e.g. `['HGETALL', key]`; the raw reply text. */
  command(args: string[]): Promise<string>;
  /** Start it again (after `stop`), on the same socket. */
  start(): Promise<void>;
  /**
   * SIGTERM and wait for it to exit. Idempotent. `save`: write its data to
   * the temp dir first (SAVE), so `start` loads it again, as a Redis with
   * persistence would come back.
   */
  stop(options?: { save?: boolean }): Promise<void>;
  /** Stop it and remove the temp dir. */
  cleanup(): Promise<void>;
}

function rawCommand(socket: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = createConnection(socket);
    let out = '';
    const payload = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
    conn.setEncoding('utf8');
    conn.on('connect', () => conn.write(payload));
    conn.on('data', (d: string) => {
      out += d;
      // One reply is enough for what the tests ask (PING, small HGETALL, INFO): wait a tick for the rest.
      setTimeout(() => conn.end(), 20);
    });
    conn.on('close', () => resolve(out));
    conn.on('error', reject);
  });
}

/** Start a redis-server on a unix socket in a fresh temp dir; resolves once it answers PING. */
export async function startTestRedis(): Promise<TestRedis> {
  if (!existsSync(REDIS_SERVER)) throw new Error(`${REDIS_SERVER} is missing: install Debian's redis-server package (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), 'mcpr-redis-'));
  const socket = join(dir, 'redis.sock');
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = async (): Promise<void> => {
    const c = spawn(REDIS_SERVER, ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = c;
    let log = '';
    c.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    c.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    await waitFor(
      async () => {
        if (c.exitCode !== null) throw new Error(`redis-server exited: ${log}`);
        return existsSync(socket) && (await rawCommand(socket, ['PING']).catch(() => '')).startsWith('+PONG');
      },
      'redis-server to answer PING',
      20_000,
      50,
    );
  };
  const stop = async (options: { save?: boolean } = {}): Promise<void> => {
    if (options.save && child) await rawCommand(socket, ['SAVE']);
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  await start();
  return {
    socket,
    pid: () => child?.pid,
    command: (args) => rawCommand(socket, args),
    start,
    stop,
    cleanup: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
