import type { CliContext } from './command.js';

/**
 * For long-running commands (`watch`, `serve`): `done` resolves when Ctrl-C,
 * SIGTERM or SIGHUP arrives, the in-process caller aborts `io.signal`, or
 * `stop()` is called. `release()` removes the signal handlers again.
 */
export function untilStopped(ctx: CliContext): { done: Promise<void>; stop: () => void; release: () => void } {
  let stop!: () => void;
  const done = new Promise<void>((resolve) => (stop = resolve));
  const { signal } = ctx.io;
  if (signal) {
    if (signal.aborted) stop();
    signal.addEventListener('abort', () => stop(), { once: true });
    return { done, stop, release: () => {} };
  }
  const onSignal = (): void => stop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  return {
    done,
    stop,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onSignal);
    },
  };
}
