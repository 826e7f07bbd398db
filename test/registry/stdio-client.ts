/**
 * Connects a plain SDK `Client` to a stdio server, so registry tests can feed
 * it real listings and results. Every client opened here is closed, and its
 * child checked dead, by {@link closeAll} (call it in `afterEach`).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, type CallToolResult, type Prompt, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { pidAlive, waitFor } from '../helpers/processes.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Path of a compiled fixture (`npx tsc -p .` puts it under `dist/test/fixtures/`). */
export function fixturePath(name: string): string {
  const path = `${root}dist/test/fixtures/${name}.js`;
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npx tsc -p .\` before these tests`);
  return path;
}

/** Path of a script inside an installed package. */
export function packagePath(relative: string): string {
  return `${root}node_modules/${relative}`;
}

export interface StdioSession {
  client: Client;
  pid: number;
  tools(): Promise<Tool[]>;
  prompts(): Promise<Prompt[]>;
  /** `tools/call` without the SDK client's own outputSchema check, so a broken result reaches the caller. */
  callRaw(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}

const open: { client: Client; pid: number }[] = [];

/** Spawn `node <script> …args` and connect to it. */
export async function connectStdio(script: string, args: string[] = [], env: Record<string, string> = {}): Promise<StdioSession> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [script, ...args], env, stderr: 'ignore' });
  const client = new Client({ name: 'registry-test', version: '0.0.0' });
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error('stdio transport has no pid after connect');
  open.push({ client, pid });
  return {
    client,
    pid,
    async tools() {
      const all: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor });
        all.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return all;
    },
    async prompts() {
      return (await client.listPrompts()).prompts;
    },
    async callRaw(name, args = {}) {
      return client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema);
    },
  };
}

/** Close every client opened by {@link connectStdio} and wait until each child is gone. */
export async function closeAll(): Promise<void> {
  const sessions = open.splice(0);
  await Promise.all(sessions.map((s) => s.client.close()));
  for (const s of sessions) await waitFor(() => !pidAlive(s.pid), `stdio child ${s.pid} to exit`);
}
