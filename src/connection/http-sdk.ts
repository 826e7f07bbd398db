/**
 * The SDK's HTTP client side (streamable HTTP, SSE, and the OAuth `auth()`
 * they call), loaded on first use. A host whose servers all run over stdio
 * never loads it: its modules and their zod schemas cost about 1 MB of heap
 * that stays for the life of the process (docs/performance.md, the manager's RSS).
 */
import type { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import type { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The classes of the SDK's HTTP client modules. */
export interface HttpSdk {
  SSEClientTransport: typeof SSEClientTransport;
  SseError: typeof SseError;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  StreamableHTTPError: typeof StreamableHTTPError;
  UnauthorizedError: typeof UnauthorizedError;
}

let loaded: HttpSdk | undefined;
let loading: Promise<HttpSdk> | undefined;

/** Load the SDK's HTTP client modules (once). */
export function loadHttpSdk(): Promise<HttpSdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/client/auth.js'),
  ]).then(([sse, http, auth]) => {
    loaded = {
      SSEClientTransport: sse.SSEClientTransport,
      SseError: sse.SseError,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      StreamableHTTPError: http.StreamableHTTPError,
      UnauthorizedError: auth.UnauthorizedError,
    };
    return loaded;
  });
  return loading;
}

/**
 * The modules when already loaded, else undefined. Their errors can only
 * have been thrown once they are: error checks use this, not a load.
 */
export function httpSdkIfLoaded(): HttpSdk | undefined {
  return loaded;
}
