/**
 * Deliver every complete message `buffer` holds (an MCP SDK `ReadBuffer`,
 * newline-delimited JSON-RPC as over stdio), in order, until it holds only a
 * partial line. A line that does not parse as JSON-RPC (a server logging to
 * stdout) is reported to `onError` and skipped, so one stray line never stalls
 * the messages behind it.
 */
export function drainMessages<M>(buffer: { readMessage(): M | null }, deliver: (message: M) => void, onError: (err: Error) => void): void {
  for (;;) {
    let message: M | null;
    try {
      message = buffer.readMessage();
    } catch (err) {
      onError(err as Error);
      continue;
    }
    if (message === null) return;
    deliver(message);
  }
}
