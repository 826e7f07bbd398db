/** Listener fan-out shared by the registries. */

/**
 * Call every listener with `change`, each isolated: one that throws is
 * reported to `onError` and the others still hear it.
 */
export function notifyAll<T>(listeners: Iterable<(change: T) => void>, change: T, onError?: (error: unknown) => void): void {
  for (const listener of [...listeners]) {
    try {
      listener(change);
    } catch (err) {
      try {
        onError?.(err);
      } catch {
        // the error sink itself failed; nothing sensible is left to do
      }
    }
  }
}
