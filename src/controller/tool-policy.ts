/**
 * `permissions.ask` and `permissions.allow` at call time (docs/manage.md):
 * a call of a tool an `ask` glob matches waits for the host's
 * `onToolApproval` answer, unless an `allow` glob (or the `readOnlyHint`
 * rule) lets it through or the user answered "always" before, which is
 * remembered in the workspace state file. `deny` never gets here: denied
 * tools are not registered at all (switches.ts).
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ScopedSettings } from '../gating/compute.js';
import type { RegisteredTool } from '../registry/registry.js';
import type { WorkspaceStateFile } from '../config/workspace-state.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { matchesAny } from '../util/glob.js';

/** The user's answer: this call, every call from now on (remembered per workspace), or no. */
export type ToolApprovalAnswer = 'allow' | 'always' | 'deny';

/** What `onToolApproval` is asked. */
export interface ToolApprovalRequest {
  /** The registered name, `mcp__<server>__<tool>`. */
  tool: string;
  server: string;
  rawName: string;
  arguments: Record<string, unknown>;
  annotations?: ToolAnnotations;
  /** The file(s) whose `permissions.ask` matched. */
  askedBy: string;
}

/** The host's question to the user; see {@link ToolApprovalRequest}. */
export type ToolApprovalHandler = (request: ToolApprovalRequest) => ToolApprovalAnswer | Promise<ToolApprovalAnswer>;

/** The `allow` entry that lets every tool annotated `readOnlyHint: true` through. */
export const READ_ONLY_RULE = 'readOnlyHint';

/** What the policy reads from the controller. */
export interface ToolPolicyDeps {
  /** The settings of the last config read. */
  settings(): readonly ScopedSettings[];
  /** The workspace state file, where "always" answers are kept; `undefined` keeps them for the session. */
  stateFile(): WorkspaceStateFile | undefined;
  handler: ToolApprovalHandler | undefined;
}

/** Call-time permissions of one controller. */
export class ToolPolicy {
  private readonly allowedThisSession = new Set<string>();

  constructor(private readonly deps: ToolPolicyDeps) {}

  /**
   * Resolve when `tool` may be called with `args` now; throw `tool_denied`
   * when the user declined or nobody can be asked. `ask` stands in for the
   * controller's handler for this one call.
   */
  async check(tool: RegisteredTool, args: Record<string, unknown>, ask?: ToolApprovalHandler): Promise<void> {
    const settings = this.deps.settings();
    const askFiles = settings.filter((s) => matchesAny(s.settings.permissions?.ask ?? [], tool.name)).map((s) => s.source);
    if (askFiles.length === 0) return;
    const allow = settings.flatMap((s) => s.settings.permissions?.allow ?? []);
    if (matchesAny(allow, tool.name)) return;
    if (allow.includes(READ_ONLY_RULE) && tool.annotations?.readOnlyHint === true) return;
    if (this.allowedThisSession.has(tool.name)) return;
    const file = this.deps.stateFile();
    if (file && (await file.read()).state.alwaysAllow?.includes(tool.name)) return;
    const askedBy = `permissions.ask in ${askFiles.join(' and ')}`;
    const handler = ask ?? this.deps.handler;
    if (!handler) {
      throw new McpReconcilerError(ErrorCode.ToolDenied, `Tool ${tool.name} needs your approval before each call (${askedBy}), and this host cannot ask`, {
        hint: 'allow it with permissions.allow, or use a host that asks (the onToolApproval option; through the gateway, a client that supports elicitation)',
        details: { tool: tool.name },
      });
    }
    const answer = await handler({
      tool: tool.name,
      server: tool.server,
      rawName: tool.rawName,
      arguments: args,
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
      askedBy,
    });
    if (answer === 'deny') {
      throw new McpReconcilerError(ErrorCode.ToolDenied, `Tool ${tool.name} was not approved (${askedBy})`, { hint: 'the call was not made', details: { tool: tool.name } });
    }
    if (answer === 'always') {
      this.allowedThisSession.add(tool.name);
      await file?.allowAlways(tool.name);
    }
  }
}
