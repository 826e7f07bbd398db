/**
 * A tool approval (`permissions.ask`, docs/manage.md) asked of the gateway's
 * client as a form elicitation: on the 2025 lane an `elicitation/create`
 * request, on the 2026-07-28 lane an input-required result. The three
 * answers are the library's `onToolApproval` ones: allow once, always allow
 * (remembered per workspace by the controller, like any "always"), deny.
 */
import type { ElicitationAnswer, ElicitationRequest } from '../connection/client-capabilities.js';
import type { ToolApprovalAnswer, ToolApprovalRequest } from '../controller/tool-policy.js';

/** The form field that carries the answer. */
export const APPROVAL_FIELD = 'decision';

/** The elicitation asking whether `name` (the client's name of the tool) may run with `request.arguments`. */
export function approvalElicitation(name: string, request: ToolApprovalRequest): ElicitationRequest {
  const args = JSON.stringify(request.arguments);
  return {
    mode: 'form',
    message: `Allow the tool ${name} to run with ${args.length > 500 ? `${args.slice(0, 500)}…` : args}? (${request.askedBy})`,
    requestedSchema: {
      type: 'object',
      properties: {
        [APPROVAL_FIELD]: {
          type: 'string',
          title: 'Decision',
          oneOf: [
            { const: 'allow', title: 'Allow once' },
            { const: 'always', title: 'Always allow (this workspace)' },
            { const: 'deny', title: 'Deny' },
          ],
        },
      },
      required: [APPROVAL_FIELD],
    },
  } as ElicitationRequest;
}

/** The approval an elicitation answer means: only an accepted `allow` or `always` lets the call run. */
export function approvalAnswer(answer: ElicitationAnswer): ToolApprovalAnswer {
  if (answer.action !== 'accept') return 'deny';
  const decision = answer.content?.[APPROVAL_FIELD];
  return decision === 'allow' || decision === 'always' ? decision : 'deny';
}

/** Whether client capabilities `caps` let a server send an elicitation in `mode` (a bare `elicitation: {}` means form). */
export function canElicit(caps: { elicitation?: object } | undefined, mode: 'form' | 'url'): boolean {
  const e = caps?.elicitation as Record<string, unknown> | undefined;
  if (!e) return false;
  if (mode === 'url') return e.url !== undefined;
  return e.form !== undefined || e.url === undefined;
}
