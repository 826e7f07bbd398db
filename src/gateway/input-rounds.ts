/**
 * Input-required rounds of the 2026-07-28 lane (SPEC §15): that revision has
 * no server-to-client requests, so when a managed server elicits or samples
 * during a client's `tools/call`, `prompts/get` or `resources/read` (or the
 * gateway asks for a tool approval), the request's answer is an
 * input-required result carrying the question; the client answers it by
 * sending the request again with `inputResponses` and the `requestState` it
 * got, and the gateway hands the answers to the questions still waiting,
 * then answers that retry with the result or the next questions.
 *
 * The request to the managed server keeps running between rounds. Its state
 * stays here, in this process (docs/gateway-rounds.md), keyed by an
 * unguessable token (the `requestState`), per lane, so only a client of the
 * same scope holding the token, retrying the same method with the same
 * params, can continue it; a flow the client does not continue within the
 * call timeout is cancelled.
 */
import { randomUUID } from 'node:crypto';
import {
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult as CallToolResultV2,
  type ClientCapabilities,
  type InputRequest,
  type InputRequiredResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { CreateMessageRequest, CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import type { ElicitationAnswer, ElicitationRequest } from '../connection/client-capabilities.js';
import type { CallContext } from './session-core.js';
import { canElicit } from './tool-approval.js';

/** One question sent to the client and not answered yet. */
interface OpenInput {
  request: InputRequest;
  /** Takes the client's bare response; `false` when it is not an answer to this question (it is asked again). */
  answer(response: unknown): boolean;
  cancel(reason: string): void;
}

/** The requests whose answer may be an input-required result (the revision's multi-round-trip methods). */
export type RoundMethod = 'tools/call' | 'prompts/get' | 'resources/read';

/** A round's params as the SDK hands them over (`inputResponses` and `requestState` lifted out). */
type RoundParams = { _meta?: { progressToken?: string | number } } & ({ name: string } | { uri: string });

/** One client request spanning rounds. */
interface Flow {
  readonly id: string;
  readonly method: RoundMethod;
  /** The first round's params: a retry must carry the same (`_meta` aside). */
  readonly params: RoundParams;
  readonly abort: AbortController;
  /** The client's capabilities as its latest round declared them. */
  caps: ClientCapabilities;
  readonly open: Map<string, OpenInput>;
  /** Settles when the request ends. */
  readonly done: Promise<{ result: unknown } | { error: unknown }>;
  ended: boolean;
  /** Wakes the round waiting for this flow when a question arrives. */
  wake?: () => void;
  /** The current round's progress sender. */
  progress?: CallContext['progress'];
  /** The token of the round the client holds, while it holds one. */
  state?: string;
  expiry?: NodeJS.Timeout;
  seq: number;
}

/** The capabilities a round's `_meta` envelope declares. */
export function envelopeCapabilities(ctx: ServerContext): ClientCapabilities {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY];
  return caps && typeof caps === 'object' ? (caps as ClientCapabilities) : {};
}

function canSample(caps: ClientCapabilities, request: CreateMessageRequest['params']): boolean {
  const s = caps.sampling as Record<string, unknown> | undefined;
  if (!s) return false;
  const withTools = (request as { tools?: unknown; toolChoice?: unknown }).tools !== undefined || (request as { toolChoice?: unknown }).toolChoice !== undefined;
  return !withTools || s.tools !== undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * JSON equality (key order aside): a retry's params against the first
 * round's. `skip` names a top-level key left out (`_meta`: progress tokens
 * may differ between rounds).
 */
function sameJson(a: unknown, b: unknown, skip?: string): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keysOf = (o: Record<string, unknown>): string[] => Object.keys(o).filter((k) => k !== skip && o[k] !== undefined);
  const keys = keysOf(a);
  return keys.length === keysOf(b).length && keys.every((k) => sameJson(a[k], b[k]));
}

/** What to send again, for the refusal of an unknown `requestState`. */
function againText(method: RoundMethod, params: RoundParams): string {
  if (method === 'resources/read') return `read ${(params as { uri: string }).uri} again`;
  const name = (params as { name: string }).name;
  return method === 'prompts/get' ? `get the prompt ${name} again` : `call ${name} again`;
}

/** The pending calls of one lane. */
export class InputRounds {
  private readonly flows = new Map<string, Flow>();
  private readonly byState = new Map<string, Flow>();
  private closed = false;

  /**
   * @param waitMs how long a flow waits for the client's next round before it is cancelled (the call timeout).
   * @param mintState makes each round's `requestState`: unguessable; a cluster's names the replica that holds the flow, so a retry landing elsewhere reaches it (docs/cluster-sessions.md).
   */
  constructor(
    private readonly waitMs: number,
    private readonly mintState: () => string = randomUUID,
  ) {}

  /**
   * Answer one round of a `tools/call`: a first call starts `call` (given the
   * flow's id as its request id, its own abort signal and a progress sender
   * that follows the rounds); a retry carrying `requestState` hands its
   * `inputResponses` to the questions waiting. Resolves with the call's
   * result, or with an input-required result while questions are open.
   */
  round(
    params: { name: string; _meta?: { progressToken?: string | number } },
    ctx: ServerContext,
    call: (callCtx: CallContext, flowId: string) => Promise<CallToolResultV2>,
  ): Promise<CallToolResultV2 | InputRequiredResult> {
    return this.roundOf('tools/call', params, ctx, call);
  }

  /**
   * {@link round} for any multi-round-trip request (`prompts/get` and
   * `resources/read` too): `run` is the request to answer, started once and
   * kept running across the rounds.
   */
  async roundOf<R>(method: RoundMethod, params: RoundParams, ctx: ServerContext, run: (callCtx: CallContext, flowId: string) => Promise<R>): Promise<R | InputRequiredResult> {
    const token = ctx.mcpReq.requestState();
    let flow: Flow;
    if (typeof token === 'string') {
      const found = this.byState.get(token);
      if (!found || found.method !== method || !sameJson(found.params, params, '_meta')) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `This requestState is unknown or expired (it works once, for the same request and params; the gateway cancels a request that waits for input longer than its call timeout, and a gateway restart forgets them): ${againText(method, params)} without requestState.`,
        );
      }
      flow = found;
      this.byState.delete(token);
      flow.state = undefined;
      if (flow.expiry) clearTimeout(flow.expiry);
      flow.caps = envelopeCapabilities(ctx);
      const responses = ctx.mcpReq.inputResponses ?? {};
      for (const [key, input] of [...flow.open]) {
        if (!Object.hasOwn(responses, key)) continue;
        if (input.answer(responses[key])) flow.open.delete(key);
      }
    } else {
      flow = this.start(method, params, envelopeCapabilities(ctx), run);
    }
    const progressToken = params._meta?.progressToken;
    flow.progress =
      progressToken !== undefined
        ? (p) => void ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, ...p } }).catch(() => undefined)
        : undefined;
    // A client that gives up on a round (cancel, closed connection) gives up on the call; a round
    // that was answered no longer speaks for it (the listener stays, inert: removing it costs as much as adding).
    let current = true;
    const signal = ctx.mcpReq.signal;
    if (signal.aborted) flow.abort.abort(signal.reason);
    else signal.addEventListener('abort', () => current && flow.abort.abort(signal.reason), { once: true });
    try {
      return (await this.next(flow)) as R | InputRequiredResult;
    } finally {
      current = false;
      flow.progress = undefined;
    }
  }

  private start(method: RoundMethod, params: RoundParams, caps: ClientCapabilities, call: (callCtx: CallContext, flowId: string) => Promise<unknown>): Flow {
    const id = `mrtr:${randomUUID()}`;
    const abort = new AbortController();
    // Registered before the call starts, so a question the call asks at once finds its flow.
    let settle!: (outcome: Awaited<Flow['done']>) => void;
    const done = new Promise<Awaited<Flow['done']>>((resolve) => (settle = resolve));
    const flow: Flow = { id, method, params, abort, caps, open: new Map(), done, ended: false, seq: 0 };
    this.flows.set(id, flow);
    call({ signal: abort.signal, requestId: id, progress: (p) => flow.progress?.(p) }, id).then(
      (result) => settle({ result }),
      (error: unknown) => settle({ error }),
    );
    void done.then(() => this.end(flow, 'the call ended'));
    return flow;
  }

  /** Wait until the call ends or questions are open; answer the round accordingly. */
  private next(flow: Flow): Promise<unknown> {
    if (flow.open.size > 0 && !flow.ended) return Promise.resolve(this.ask(flow));
    return new Promise((resolve, reject) => {
      let settled = false;
      flow.wake = () => {
        if (settled) return;
        settled = true;
        flow.wake = undefined;
        // Questions asked in the same tick go out together.
        setImmediate(() => this.next(flow).then(resolve, reject));
      };
      void flow.done.then((outcome) => {
        if (settled) return;
        settled = true;
        flow.wake = undefined;
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.result);
      });
    });
  }

  private ask(flow: Flow): InputRequiredResult {
    const state = this.mintState();
    flow.state = state;
    this.byState.set(state, flow);
    flow.expiry = setTimeout(() => this.abandon(flow), this.waitMs);
    flow.expiry.unref();
    const inputRequests: Record<string, InputRequest> = {};
    for (const [key, input] of flow.open) inputRequests[key] = input.request;
    return inputRequired({ inputRequests, requestState: state });
  }

  /** The client never came back for this round: cancel the call. */
  private abandon(flow: Flow): void {
    if (flow.state) this.byState.delete(flow.state);
    flow.state = undefined;
    if (flow.ended) return;
    flow.abort.abort(new Error('the client did not answer the input-required result in time'));
    this.end(flow, 'the client did not answer in time');
  }

  /**
   * The call is over (or given up): its open questions are cancelled. A
   * token the client still holds stays valid until it expires, so the
   * client's next round gets the call's outcome.
   */
  private end(flow: Flow, reason: string): void {
    if (flow.ended) return;
    flow.ended = true;
    this.flows.delete(flow.id);
    for (const input of flow.open.values()) input.cancel(reason);
    flow.open.clear();
  }

  /** Put a question to the client of flow `flowId`; resolves with its bare response once a round brings it. */
  private put<T>(flowId: string, kind: string, request: InputRequest, accept: (response: unknown) => T | undefined, onCancel: (reason: string) => T | Error, signal?: AbortSignal): Promise<T> | undefined {
    const flow = this.flows.get(flowId);
    if (!flow || flow.ended || this.closed) return undefined;
    const key = `${kind}-${++flow.seq}`;
    return new Promise<T>((resolve, reject) => {
      const settle = (value: T | Error): void => {
        signal?.removeEventListener('abort', onAbort);
        if (value instanceof Error) reject(value);
        else resolve(value);
      };
      const onAbort = (): void => {
        flow.open.delete(key);
        settle(onCancel('the server withdrew the question'));
      };
      flow.open.set(key, {
        request,
        answer: (response) => {
          const value = accept(response);
          if (value === undefined) return false;
          settle(value);
          return true;
        },
        cancel: (reason) => settle(onCancel(reason)),
      });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      flow.wake?.();
    });
  }

  /**
   * Ask the client of flow `flowId` an elicitation; `undefined` when there
   * is no such flow or its client did not declare elicitation in this mode.
   */
  elicit(flowId: string, request: ElicitationRequest, signal?: AbortSignal): Promise<ElicitationAnswer> | undefined {
    const flow = this.flows.get(flowId);
    if (!flow || !canElicit(flow.caps, request.mode === 'url' ? 'url' : 'form')) return undefined;
    const params = request.mode === 'url' ? (({ elicitationId: _id, ...rest }) => rest)(request as typeof request & { elicitationId?: string }) : request;
    return this.put<ElicitationAnswer>(
      flowId,
      'elicit',
      { method: 'elicitation/create', params } as InputRequest,
      (r) => {
        if (!isObject(r) || !['accept', 'decline', 'cancel'].includes(r.action as string)) return undefined;
        return { action: r.action as ElicitationAnswer['action'], ...(isObject(r.content) ? { content: r.content } : {}) };
      },
      () => ({ action: 'cancel' }),
      signal,
    );
  }

  /** Ask the client of flow `flowId` for a sampling; `undefined` when it did not declare sampling. */
  sample(flowId: string, request: CreateMessageRequest['params'], signal?: AbortSignal): Promise<CreateMessageResult> | undefined {
    const flow = this.flows.get(flowId);
    if (!flow || !canSample(flow.caps, request)) return undefined;
    return this.put<CreateMessageResult>(
      flowId,
      'sample',
      { method: 'sampling/createMessage', params: request } as InputRequest,
      (r) => (isObject(r) && typeof r.role === 'string' && r.content !== undefined ? (r as unknown as CreateMessageResult) : undefined),
      (reason) => new ProtocolError(ProtocolErrorCode.InternalError, `the client did not answer the sampling request: ${reason}`),
      signal,
    );
  }

  /** Whether the client of flow `flowId` declared form elicitation (so a tool approval can be asked). */
  canAsk(flowId: string): boolean {
    const flow = this.flows.get(flowId);
    return flow !== undefined && canElicit(flow.caps, 'form');
  }

  /** Cancel every flow (the lane closes). */
  close(): void {
    this.closed = true;
    for (const flow of [...this.flows.values()]) {
      flow.abort.abort(new Error('the gateway lane closed'));
      this.end(flow, 'the gateway lane closed');
    }
    for (const flow of this.byState.values()) if (flow.expiry) clearTimeout(flow.expiry);
    this.byState.clear();
  }

  /** Flows in progress (for tests and status). */
  get size(): number {
    return this.flows.size;
  }
}
