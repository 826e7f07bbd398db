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
import { findProfile, narrow, profileNames } from '../../controller/profiles.js';

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
  // `--profile` narrows as the controller does (docs/manage.md): servers it leaves out are not shown,
  // the ones it keeps show the tools it keeps as their `includeTools`; one no file defines keeps nothing.
  const profile = g.profile === undefined ? undefined : findProfile(settings, g.profile);
  const leftOut: string[] = [];
  const entries = Object.values(desired)
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e): DesiredServer[] => {
      if (g.profile === undefined) return [e];
      const n = profile ? narrow(profile.definition, e.name, e.config) : { off: true };
      if (n.off) {
        leftOut.push(e.name);
        return [];
      }
      return [n.includeTools === undefined ? e : { ...e, config: { ...e.config, includeTools: n.includeTools } }];
    });
  const profileNote =
    g.profile === undefined ? undefined : profile ? `${g.profile} (${profile.file})` : `${g.profile} (no settings file defines it: it keeps nothing; defined: ${joinList(profileNames(settings), 'none')})`;

  if (g.json) {
    const doc = {
      root: g.root,
      preset: g.preset.name,
      sources: ws.loaded.map((l) => ({ path: l.source.path, scope: l.source.scope, exists: l.exists, ...(l.source.at ? { at: l.source.at } : {}) })),
      gating: computed.lists,
      ...(g.profile !== undefined ? { profile: { name: g.profile, file: profile?.file ?? null, leftOut } } : {}),
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
    ...(profileNote !== undefined ? [['profile', profileNote]] : []),
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
    lines.push(g.profile !== undefined && leftOut.length > 0 ? `no servers kept by profile "${g.profile}"` : 'no servers configured');
  } else {
    lines.push(
      table([
        ['NAME', 'SCOPE', 'TYPE', 'VERDICT', 'APPROVAL', 'SOURCE'],
        ...entries.map((e) => [e.name, e.scope, transportOf(e.config), getOwn(computed.verdicts, e.name) ?? '?', approvalOf(e) ?? '-', show(e.source)]),
      ]),
    );
  }
  if (leftOut.length > 0) lines.push('', `left out by profile "${g.profile}": ${leftOut.join(', ')}`);
  io.stdout.write(`${lines.join('\n')}\n`);
  if (g.profile !== undefined && !profile) io.stderr.write(`warning: no profile named "${g.profile}" is defined (defined: ${joinList(profileNames(settings), 'none')})\n`);
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
    'mcp-reconciler config --profile research      # only what profile "research" keeps',
  ],
  summary: 'the merged desired map with each entry’s source and gating',
  run,
};
