import { approvalStateOf, isGated, type ApprovalState } from '../../../machines/admission.js';
import type { DesiredServer, ServerConfig } from '../../../machines/types.js';
import { decisionsFor } from '../../approvals/hash.js';
import { canonicalRoot, FileApprovalStore } from '../../approvals/store.js';
import { effectiveConfig } from '../../config/effective.js';
import { redactServerConfig } from '../../config/redact.js';
import { formatIssue } from '../../config/sources.js';
import { ErrorCode, McpReconcilerError } from '../../errors.js';
import { transportOf } from '../../config/identity.js';
import type { CliCommand, CliContext } from '../command.js';
import { displayPath } from '../../format/paths.js';
import { joinList, table } from '../output.js';
import { loadWorkspace } from '../workspace.js';
import { getOwn } from '../../util/own.js';

// The shown config is the expanded one; `config` output is for looking at, so
// it never prints env/header values or credential-looking args (src/config/redact.ts).
// Answers to `password` inputs are hidden wherever they went (src/config/load.ts `secrets`).
const redact = (config: ServerConfig, secrets: readonly string[]): Omit<ServerConfig, 'instance'> => redactServerConfig(config, secrets);

async function run(ctx: CliContext): Promise<number> {
  const { io, global: g } = ctx;
  const ws = await loadWorkspace(g, io);
  const fatal = ws.loaded.filter((l) => l.fatal).flatMap((l) => l.issues);
  if (fatal.length > 0) {
    throw new McpReconcilerError(ErrorCode.ConfigInvalid, fatal.map(formatIssue).join('\n       '), {
      hint: 'fix the file and run again; a running controller keeps the last good config meanwhile',
      details: { issues: fatal },
    });
  }
  const { desired, scopedSettings: settings } = ws.assembled;
  const store = new FileApprovalStore(g.approvalsPath);
  const { decisions, error: approvalsError } = await store.load(await canonicalRoot(g.root));
  // The effective config exactly as the controller computes it (SPEC §2.3); the person
  // running the CLI in this folder is the one who trusts it.
  const { issues, gating: computed } = effectiveConfig(
    { desired, settings, issues: ws.assembled.issues },
    { approvals: decisionsFor(decisions, desired), cliAllowedServerNames: g.cliAllowedServerNames, trusted: true },
  );

  const approvalOf = (e: DesiredServer): ApprovalState | null => (isGated(e) ? approvalStateOf(e, computed.gating) : null);
  const entries = Object.values(desired).sort((a, b) => a.name.localeCompare(b.name));

  if (g.json) {
    const doc = {
      root: g.root,
      preset: g.preset.name,
      sources: ws.loaded.map((l) => ({ path: l.source.path, scope: l.source.scope, exists: l.exists, ...(l.source.at ? { at: l.source.at } : {}) })),
      gating: computed.lists,
      servers: entries.map((e) => ({
        name: e.name,
        scope: e.scope,
        source: e.source,
        type: transportOf(e.config),
        verdict: getOwn(computed.verdicts, e.name) ?? null,
        approval: approvalOf(e),
        fingerprint: e.fingerprint,
        hash: e.hash,
        config: redact(e.config, ws.loaded.flatMap((l) => l.secrets ?? [])),
      })),
      issues,
      ...(approvalsError ? { approvalsError: { message: approvalsError.message, hint: approvalsError.hint } } : {}),
    };
    io.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return 0;
  }

  const show = (p: string) => displayPath(p, g.root, g.home);
  const lines: string[] = [];
  lines.push(table([
    ['root', g.root],
    ['preset', g.preset.name],
  ]));
  lines.push('', 'sources');
  const where = (l: (typeof ws.loaded)[number]) => show(l.source.path) + (l.source.at ? ` ${l.source.at.map((k) => `[${JSON.stringify(k)}]`).join('')}` : '');
  lines.push(indent(table(ws.loaded.map((l) => [l.source.scope, where(l), l.exists ? '' : '(missing)']))));
  lines.push('', 'gating');
  lines.push(
    indent(
      table([
        ['allowed', computed.lists.allowed === undefined ? '(all)' : joinList(computed.lists.allowed, '(none: deny all)')],
        ['excluded', joinList(computed.lists.excluded)],
        ['pending', joinList(computed.lists.pending)],
        ['rejected', joinList(computed.lists.rejected)],
      ]),
    ),
  );
  lines.push('');
  if (entries.length === 0) {
    lines.push('no servers configured');
  } else {
    lines.push(
      table([
        ['NAME', 'SCOPE', 'TYPE', 'VERDICT', 'APPROVAL', 'SOURCE'],
        ...entries.map((e) => [e.name, e.scope, transportOf(e.config), getOwn(computed.verdicts, e.name) ?? '?', approvalOf(e) ?? '-', show(e.source)]),
      ]),
    );
  }
  io.stdout.write(`${lines.join('\n')}\n`);
  for (const issue of issues) io.stderr.write(`warning: ${formatIssue(issue)}\n`);
  if (approvalsError) {
    io.stderr.write(`warning: approvals: ${approvalsError.message}\n`);
    if (approvalsError.hint) io.stderr.write(`hint: ${approvalsError.hint}\n`);
  }
  return 0;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}

/** `config`: the merged desired map with each entry's scope, source, type, verdict and approval. */
export const configCommand: CliCommand = {
  name: 'config',
  examples: [
    "mcp-reconciler config                       # every server, its source file, verdict and approval",
    "mcp-reconciler config --preset vscode --json",
  ],
  summary: 'the merged desired map with each entry’s source and gating',
  run,
};
