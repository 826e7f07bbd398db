/**
 * Building the SDK's 2025 wire schemas while a `server/discover` probe is
 * out, instead of after its answer (docs/performance.md, "The probe's
 * fallback is on the critical path"). SDK v2 builds each era's schema set on
 * first use; for a 2025-era server under `auto` that first use is the
 * `initialize` that follows the probe's refusal, so the server, already
 * running, waits 10–15 ms for the host to build schemas it could have built
 * while the server was starting. The SDK exports no way to build only the
 * 2025 set (`preloadSchemas()` builds the 2026 one as well, ~35 ms more), so
 * a throwaway client opens a 2025 handshake over an in-memory pair nobody
 * answers: its `initialize` request builds the set, and the client is closed
 * a turn later. Once per process; the set is the SDK's own memo, shared with
 * every later client.
 */
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';

let warmed = false;

/** Build the SDK's 2025 wire schemas now, once per process (a no-op after the first call). */
export function warmLegacySchemas(): void {
  if (warmed) return;
  warmed = true;
  const [local] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'mcp-reconciler-warmup', version: '0' }, { versionNegotiation: { mode: 'legacy' } });
  // The handshake's `initialize` goes out within this turn's microtasks; nothing ever answers it.
  client.connect(local).catch(() => {});
  setImmediate(() => {
    client.close().catch(() => {});
  });
}
