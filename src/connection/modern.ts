/**
 * SPIKE, not wired into the connection layer: connect to a server with the
 * SDK's v2 client (`@modelcontextprotocol/client`), which negotiates the
 * protocol era (`server/discover` for 2026-07-28, else the 2025
 * `initialize`). Used only by its test, to learn what the migration of
 * `connect.ts` needs. The v2 packages are devDependencies for now.
 */
import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

/** Where the spike connects: a stdio command or a streamable-HTTP URL. */
export type ModernTarget = { command: string; args?: string[]; env?: Record<string, string>; cwd?: string } | { url: string };

/** How the spike negotiates: the SDK's `auto` (discover, then fall back), or a pinned revision. */
export type ModernMode = 'auto' | { pin: string };

/** What a spike connection exposes. */
export interface ModernConnection {
  /** `modern` after `server/discover`, `legacy` after `initialize`. */
  era: string | undefined;
  protocolVersion: string | undefined;
  serverName: string | undefined;
  listToolNames(): Promise<string[]>;
  callTool(name: string, args: Record<string, unknown>): Promise<{ content?: unknown; structuredContent?: unknown; isError?: boolean }>;
  close(): Promise<void>;
}

/** Connect with the v2 client; throws what the SDK throws. */
export async function openModern(target: ModernTarget, options: { mode?: ModernMode; timeoutMs?: number } = {}): Promise<ModernConnection> {
  const client = new Client({ name: 'mcp-reconciler', version: '0.1.0' }, { capabilities: {}, versionNegotiation: { mode: options.mode ?? 'auto' } });
  const transport: Transport =
    'url' in target
      ? new StreamableHTTPClientTransport(new URL(target.url))
      : new StdioClientTransport({ command: target.command, args: target.args ?? [], ...(target.env ? { env: target.env } : {}), ...(target.cwd ? { cwd: target.cwd } : {}), stderr: 'pipe' });
  try {
    await client.connect(transport, { timeout: options.timeoutMs ?? 30_000 });
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return {
    era: client.getProtocolEra(),
    protocolVersion: client.getNegotiatedProtocolVersion(),
    serverName: client.getServerVersion()?.name,
    async listToolNames() {
      const names: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? undefined : { cursor });
        names.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return names;
    },
    callTool: (name, args) => client.callTool({ name, arguments: args }) as Promise<{ content?: unknown; structuredContent?: unknown; isError?: boolean }>,
    close: () => client.close(),
  };
}
