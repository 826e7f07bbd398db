/**
 * What the client offers servers (docs/oauth.md): elicitation, sampling and
 * roots. A capability is declared only when the host can back it —
 * elicitation needs `onElicitation`, sampling needs `onSampling` — so a
 * server never sends a request nobody answers. Roots default to the
 * workspace folder.
 */
import { pathToFileURL } from 'node:url';
import { basename } from 'node:path';
import { ProtocolError, type Client, type ClientCapabilities, type ElicitResult, type JsonSchemaType } from '@modelcontextprotocol/client';
// The host-facing vocabulary stays SDK v1's spec types (the same JSON on both wires).
import type { CreateMessageRequest, CreateMessageResult, ElicitRequest, Root } from '@modelcontextprotocol/sdk/types.js';
import { newAjvValidator } from '../util/ajv.js';

/** An elicitation as the host sees it: form mode (`requestedSchema`) or URL mode (`url`). */
export type ElicitationRequest = ElicitRequest['params'];

/** The host's answer. `content` only with `accept` in form mode. */
export interface ElicitationAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
}

/**
 * Answers `elicitation/create` for `server`. For a form, return the fields
 * the user filled in: omitted fields get the schema's defaults (SEP-1034)
 * and the result is checked against the schema before it is sent. For a
 * URL, open it (or show it) and return `accept` once the user agreed.
 */
export type ElicitationHandler = (server: string, request: ElicitationRequest, options: { signal: AbortSignal }) => ElicitationAnswer | Promise<ElicitationAnswer>;

/** Answers `sampling/createMessage` for `server` with the host's model. */
export type SamplingHandler = (
  server: string,
  request: CreateMessageRequest['params'],
  options: { signal: AbortSignal },
) => CreateMessageResult | Promise<CreateMessageResult>;

/**
 * Told that `server` finished the out-of-band step of the URL elicitation
 * `elicitationId` (`notifications/elicitation/complete`, 2025 revisions).
 */
export type ElicitationCompleteHandler = (server: string, elicitationId: string) => void;

/** Host features the client declares to every server. */
export interface ClientFeatures {
  onElicitation?: ElicitationHandler;
  /** Hears `notifications/elicitation/complete` (only with `onElicitation`). */
  onElicitationComplete?: ElicitationCompleteHandler;
  /** Elicitation modes offered when `onElicitation` is set. Default both. */
  elicitationModes?: readonly ('form' | 'url')[];
  onSampling?: SamplingHandler;
  /** Current roots, read on every `roots/list`; `undefined` declares no roots capability. */
  roots?: () => readonly Root[];
}

/** The workspace folder as the one root. */
export function workspaceRoots(root: string): Root[] {
  return [{ uri: pathToFileURL(root).href, name: basename(root) || root }];
}

/** The capabilities to declare for `features`. */
export function clientCapabilities(features: ClientFeatures | undefined): ClientCapabilities {
  const caps: ClientCapabilities = {};
  if (features?.onElicitation) {
    const modes = features.elicitationModes ?? ['form', 'url'];
    caps.elicitation = {
      ...(modes.includes('form') ? { form: { applyDefaults: true } } : {}),
      ...(modes.includes('url') ? { url: {} } : {}),
    };
  }
  if (features?.onSampling) caps.sampling = {};
  if (features?.roots) caps.roots = { listChanged: true };
  return caps;
}

/** Built with the first elicitation answer to check (util/ajv.ts: Ajv loads then). */
let validator: ReturnType<typeof newAjvValidator> | undefined;

/** SEP-1034: a field the user left out takes the schema's default. */
export function applyElicitationDefaults(schema: ElicitationFormSchema, content: Record<string, unknown>): Record<string, unknown> {
  const out = { ...content };
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    if (out[key] === undefined && prop && typeof prop === 'object' && 'default' in prop && prop.default !== undefined) out[key] = prop.default;
  }
  return out;
}

type ElicitationFormSchema = Extract<ElicitationRequest, { requestedSchema: unknown }>['requestedSchema'];

/** Violations of `schema` by `content`, as `field: message` lines; [] when it fits. */
export function elicitationViolations(schema: ElicitationFormSchema, content: Record<string, unknown>): string[] {
  const check = (validator ??= newAjvValidator()).getValidator(schema as unknown as JsonSchemaType);
  const result = check(content);
  if (result.valid) return [];
  return [result.errorMessage ?? 'the answer does not match the requested schema'];
}

/** JSON-RPC error codes the handlers answer with. */
const INTERNAL_ERROR = -32603;
const INVALID_PARAMS = -32602;

/**
 * Install the handlers for `features` on `client` (before it connects). The
 * server name is passed to every host callback. On the 2025 wire the server
 * sends these as requests; on the 2026-07-28 wire they arrive inside an
 * input-required result and the SDK answers them through the same handlers.
 */
export function installClientHandlers(client: Client, server: string, features: ClientFeatures | undefined): void {
  if (features?.onElicitation) {
    const onElicitation = features.onElicitation;
    client.setRequestHandler('elicitation/create', async (request, ctx): Promise<ElicitResult> => {
      const params = request.params as ElicitationRequest;
      const answer = await onElicitation(server, params, { signal: ctx.mcpReq.signal });
      if (!answer || !['accept', 'decline', 'cancel'].includes(answer.action)) {
        throw new ProtocolError(INTERNAL_ERROR, 'the host answered the elicitation with no valid action');
      }
      if (answer.action !== 'accept') return { action: answer.action };
      if (params.mode === 'url') return { action: 'accept' };
      const schema = (params as { requestedSchema: ElicitationFormSchema }).requestedSchema;
      const content = applyElicitationDefaults(schema, answer.content ?? {});
      const violations = elicitationViolations(schema, content);
      // An answer that breaks the requested schema is not sent: the server asked for exactly this shape.
      if (violations.length > 0) throw new ProtocolError(INVALID_PARAMS, `the answer does not match the requested schema: ${violations.join('; ')}`);
      return { action: 'accept', content: content as ElicitResult['content'] };
    });
    const onComplete = features.onElicitationComplete;
    if (onComplete) client.setNotificationHandler('notifications/elicitation/complete', (n) => onComplete(server, n.params.elicitationId));
  }
  if (features?.onSampling) {
    const onSampling = features.onSampling;
    client.setRequestHandler('sampling/createMessage', async (request, ctx) => (await onSampling(server, request.params as CreateMessageRequest['params'], { signal: ctx.mcpReq.signal })) as never);
  }
  if (features?.roots) {
    const roots = features.roots;
    client.setRequestHandler('roots/list', async () => ({ roots: [...roots()] }));
  }
}
