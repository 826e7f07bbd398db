/**
 * `permissions.ask` and `permissions.allow` at call time (docs/manage.md),
 * from the settings files and from the server's own entry: a call of a tool
 * an `ask` rule matches waits for the host's `onToolApproval` answer, unless
 * an `allow` rule (a glob, or an annotation such as `readOnlyHint`) lets it
 * through or the user answered "always" before, which is remembered in the
 * workspace state file. `deny` never gets here: denied tools are not
 * registered at all (switches.ts).
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ScopedSettings } from '../gating/compute.js';
import type { RegisteredTool } from '../registry/registry.js';
import type { WorkspaceStateFile } from '../config/workspace-state.js';
import { ErrorCode, McpReconcilerError } from '../errors.js';
import { globMatch, matchesAny } from '../util/glob.js';
import type { ToolPermissionLists } from '../../machines/types.js';
import { rawPatterns } from './profiles.js';

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

/**
 * Rules that match by annotation instead of by name (docs/manage.md), in
 * `allow` and `ask`: a tool whose `annotations` set that hint to `true`.
 * An absent hint never matches (the spec's defaults are not facts about the tool).
 */
export const ANNOTATION_RULES = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/** A server's own permissions and the file they are in. */
export interface ServerPermissions {
  permissions: ToolPermissionLists;
  /** Where the entry is (a file, or `its runtime config`). */
  file: string;
}

/** What the policy reads from the controller. */
export interface ToolPolicyDeps {
  /** The settings of the last config read. */
  settings(): readonly ScopedSettings[];
  /** The `permissions` of server `server`'s entry, when it has any. */
  serverPermissions?(server: string): ServerPermissions | undefined;
  /** The workspace state file, where "always" answers are kept; `undefined` keeps them for the session. */
  stateFile(): WorkspaceStateFile | undefined;
  handler: ToolApprovalHandler | undefined;
}

/** Whether `rule` names an annotation `tool` sets to `true`. */
function annotated(rule: string, tool: RegisteredTool): boolean {
  return (ANNOTATION_RULES as readonly string[]).includes(rule) && (tool.annotations as Record<string, unknown> | undefined)?.[rule] === true;
}

/** Whether a settings-file rule (a glob over registered names, or an annotation) matches `tool`. */
function fileRuleMatches(rules: readonly string[], tool: RegisteredTool): boolean {
  return rules.some((r) => annotated(r, tool) || globMatch(r, tool.name));
}

/** Whether a server entry's rule (a glob over its tool names, bare or `mcp__<server>__<tool>`, or an annotation) matches `tool`. */
function serverRuleMatches(rules: readonly string[], tool: RegisteredTool): boolean {
  return rules.some((r) => annotated(r, tool) || matchesAny(rawPatterns(tool.server, [r]), tool.rawName));
}

/** Call-time permissions of one controller. */
export class ToolPolicy {
  private readonly allowedThisSession = new Set<string>();

  constructor(private readonly deps: ToolPolicyDeps) {}

  /**
   * Who holds a call of `tool` for approval (`permissions.ask in …`), or
   * `undefined` when it runs without asking. An `allow` lifts an `ask` of its
   * own level or a broader one: a server entry's `allow` lifts any `ask`, a
   * settings file's `allow` lifts the settings files' `ask` but not the
   * server entry's own (the narrower rule wins). `deny` never gets here.
   */
  askedBy(tool: RegisteredTool): string | undefined {
    const settings = this.deps.settings();
    const askFiles = settings.filter((s) => fileRuleMatches(s.settings.permissions?.ask ?? [], tool)).map((s) => s.source);
    const own = this.deps.serverPermissions?.(tool.server);
    const ownAsk = own !== undefined && serverRuleMatches(own.permissions.ask ?? [], tool);
    if (askFiles.length === 0 && !ownAsk) return undefined;
    if (own !== undefined && serverRuleMatches(own.permissions.allow ?? [], tool)) return undefined;
    if (!ownAsk && fileRuleMatches(settings.flatMap((s) => s.settings.permissions?.allow ?? []), tool)) return undefined;
    const by = [...(askFiles.length > 0 ? [`permissions.ask in ${askFiles.join(' and ')}`] : []), ...(ownAsk ? [`the permissions.ask of server "${tool.server}" in ${own.file}`] : [])];
    return by.join(' and ');
  }

  /**
   * Resolve when `tool` may be called with `args` now; throw `tool_denied`
   * when the user declined or nobody can be asked. `ask` stands in for the
   * controller's handler for this one call.
   */
  async check(tool: RegisteredTool, args: Record<string, unknown>, ask?: ToolApprovalHandler): Promise<void> {
    const askedBy = this.askedBy(tool);
    if (askedBy === undefined) return;
    if (this.allowedThisSession.has(tool.name)) return;
    const file = this.deps.stateFile();
    if (file && (await file.read()).state.alwaysAllow?.includes(tool.name)) return;
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
