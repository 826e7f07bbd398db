/**
 * The headers a server's `headersHelper` printed, for the life of one
 * connection. Helpers often print short-lived tokens: once the connection is
 * established, a 401 on a request that carried the helper's latest output
 * runs the helper once more and sends the request again with what it prints
 * now, before the 401 reaches the SDK client (where it would fail the call).
 * Concurrent 401s share one run; a request whose retry is refused too gets
 * its 401 like any other.
 */
import type { FetchLike } from '@modelcontextprotocol/client';

/** Runs the helper; rejects with what went wrong (never a header value). */
export type RunHelper = (signal: AbortSignal) => Promise<Record<string, string>>;

export class HelperHeaders {
  /** Bumped by every run that produced new headers; a 401 on an older version needs no run of its own. */
  private version = 0;
  private running: Promise<void> | undefined;
  private armed = false;
  private readonly closed = new AbortController();

  /**
   * @param current what the helper printed for this connect
   * @param run runs the helper again
   * @param onRerunFailed told why a re-run failed (the 401 then stands)
   */
  constructor(
    private current: Record<string, string>,
    private readonly run: RunHelper,
    private readonly onRerunFailed: (err: unknown) => void = () => {},
  ) {}

  /** The latest output (for a transport built later, such as the SSE fallback). */
  get headers(): Record<string, string> {
    return { ...this.current };
  }

  /** The connection is established: from now on a 401 re-runs the helper (at connect it has only just run). */
  arm(): void {
    this.armed = true;
  }

  /** The connection is over: a run in progress is killed and none starts. */
  close(): void {
    this.armed = false;
    this.closed.abort();
  }

  /** `next` with the latest helper output on every request, and the 401 rule above. */
  wrap(next: FetchLike): FetchLike {
    return async (url, init) => {
      const seen = this.version;
      const response = await next(url, this.withHeaders(init));
      if (response.status !== 401 || !this.armed) return response;
      if (!(await this.refresh(seen))) return response;
      await response.body?.cancel().catch(() => {});
      return next(url, this.withHeaders(init));
    };
  }

  private withHeaders(init: RequestInit | undefined): RequestInit {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(this.current)) headers.set(name, value);
    return { ...init, headers };
  }

  /** New headers exist after this resolves true: someone else's run since `seen`, or ours. */
  private async refresh(seen: number): Promise<boolean> {
    if (this.version !== seen) return true;
    this.running ??= this.run(this.closed.signal)
      .then((headers) => {
        this.current = headers;
        this.version++;
      })
      .catch((err: unknown) => {
        if (!this.closed.signal.aborted) this.onRerunFailed(err);
      })
      .finally(() => {
        this.running = undefined;
      });
    await this.running;
    return this.version !== seen && this.armed;
  }
}
