/**
 * docs/manage.md, minimal edits: `add` then `remove` gives back every byte of
 * a host's file whatever its formatting. Each host file of
 * test/fixtures/host-configs is tried in the dozen formattings that host
 * files are found in on public repositories: 2 or 4 spaces or tabs, CRLF
 * line ends, no final newline, a byte-order mark, minified, re-serialised by
 * a tool, trailing commas, comment blocks, an empty servers object, non-ASCII
 * text; Codex's TOML in its own dozen (inline or sub-table env, trailing
 * comments, quoted keys, CRLF…). What `add` wrote is read back by the
 * host-faithful reader as asked, and the servers the file had stay as read.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addServer, editTargets, removeServer, type EditScope, type ServerSpec } from '../../src/config/edit.js';
import { ConfigReader, configSources } from '../../src/config/reader.js';
import { resolvePreset } from '../../src/config/presets.js';
import { makeTempHome, removeTempHome, type TempHome } from '../helpers/temp-home.js';

const fixtures = resolve(import.meta.dirname, '../fixtures/host-configs');
/** Where the local-scope fixture names its project folder (replaced by the test's workspace). */
const FIXTURE_ROOT = '/home/dev/src/website';

let { home, ws, env }: TempHome = { home: '', ws: '', env: {} };
beforeAll(async () => void ({ home, ws, env } = await makeTempHome('mcpr-variants')));
afterAll(() => removeTempHome({ home, ws }));

type Transform = (text: string, keyPath: string[]) => string;

/** Re-indent: each leading indentation level (2 spaces or a tab) becomes `unit`. */
function reindent(unit: string): Transform {
  return (text) =>
    text.replace(/^([ \t]+)/gm, (lead) => {
      const levels = lead.includes('\t') ? lead.length : Math.round(lead.length / 2);
      return unit.repeat(levels);
    });
}

const valueOf = (text: string): Record<string, unknown> => parseJsonc(text.replace(/^\uFEFF/, ''), [], { allowTrailingComma: true }) as Record<string, unknown>;
const pretty = (value: unknown, indent: number | string = 2): string => `${JSON.stringify(value, null, indent)}\n`;

/** The dozen JSON formattings (each a function of the fixture's text). */
const jsonVariants: [string, Transform][] = [
  ['as found', (t) => t],
  ['4-space indent', reindent('    ')],
  ['tab indent', reindent('\t')],
  ['CRLF line ends', (t) => t.replace(/\r?\n/g, '\r\n')],
  ['no final newline', (t) => t.replace(/\s+$/, '')],
  ['byte-order mark', (t) => `\uFEFF${t}`],
  ['minified', (t) => JSON.stringify(valueOf(t))],
  ['re-serialised by a tool, 4 spaces', (t) => pretty(valueOf(t), 4)],
  // Trailing commas are added to a comment-free rendering, so no comma lands inside a comment.
  ['trailing commas', (t) => pretty(valueOf(t)).replace(/([^\s,{[])(\n\s*[}\]])/g, '$1,$2')],
  ['comment blocks', (t) => `// Edited by hand; keep the order.\n/* servers below\n   are shared by the team */\n${pretty(valueOf(t)).replace(/\n(\s*)("[^"]+": \{)/, '\n$1// the first object\n$1$2')}`],
  [
    'empty servers object',
    (t, keyPath) => {
      const value = valueOf(t);
      let at: Record<string, unknown> = value;
      for (const key of keyPath.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
      at[keyPath[keyPath.length - 1]!] = {};
      return pretty(value);
    },
  ],
  ['non-ASCII text', (t) => pretty({ '备注': '設定 ✓ 🚀 — ÿ', ...valueOf(t) })],
];

// [preset, scope, fixture]: the JSON hosts of test/config/edit.test.ts.
const jsonCases: [string, EditScope, string][] = [
  ['claude-code', 'user', 'claude-code/user.claude.json'],
  ['claude-code', 'local', 'claude-code/user.claude.json'],
  ['claude-code', 'project', 'claude-code/project.mcp.json'],
  ['vscode', 'project', 'vscode/workspace-inputs.json'],
  ['vscode', 'workspace', 'vscode/workspace-remote.json'],
  ['cursor', 'project', 'cursor/project.json'],
  ['gemini', 'user', 'gemini/user-settings.json'],
  ['qwen', 'user', 'qwen/user-settings.json'],
  ['zed', 'user', 'zed/settings.json'],
  ['opencode', 'project', 'opencode/opencode.jsonc'],
  ['cline', 'user', 'cline/cline_mcp_settings.json'],
  ['windsurf', 'user', 'windsurf/mcp_config.json'],
  ['claude-desktop', 'user', 'claude-desktop/claude_desktop_config.json'],
  ['roo', 'project', 'roo/mcp.json'],
  ['default', 'user', 'default/settings.json'],
];

/** Codex's TOML, in the shapes its users write it. */
const tomlVariants: [string, string][] = [
  ['tables, a sub-table env', '[mcp_servers.docs]\nurl = "https://developers.openai.com/mcp"\n\n[mcp_servers.docs.env]\nLOG_LEVEL = "warn"\n'],
  ['inline env table', 'model = "o3"\n\n[mcp_servers.private-api]\ncommand = "uvx"\nargs = ["srv"]\nenv = { API_TOKEN = "${TOKEN}" }\n'],
  ['schema line and CJK comments', '#:schema https://developers.openai.com/codex/config-schema.json\n\n# 项目级 Codex 默认配置。\napproval_policy = "on-request"\n\n# 外部工具连接\n[mcp_servers.memos]\nurl = "https://memos.example.com/mcp"\nbearer_token_env_var = "MEMOS_PAT"\n'],
  ['trailing comments after values', 'notify = ["say", "done"]   # a comment that must survive\n\n[features]\njs_repl = true # on\n\n[mcp_servers.node_repl]\ncommand = "node" # the launcher\n'],
  ['no servers yet', 'approval_policy = "on-request"\nsandbox_mode = "workspace-write"\n\n[sandbox_workspace_write]\nnetwork_access = false\n\n'],
  ['multi-line arrays', '[mcp_servers.memos]\nurl = "https://memos.example.com/mcp"\nenabled = true\nenabled_tools = [\n  "auth_get_current_user",\n  "memo_list_memos",\n]\ntool_timeout_sec = 60\n'],
  ['CRLF line ends', '[features]\r\nrmcp_client = true\r\n\r\n[mcp_servers.steroid]\r\nurl = "http://127.0.0.1:6315/mcp"\r\n'],
  ['no final newline', '[mcp_servers.warpgate]\ncommand = "npx"\nargs = ["-y", "warpgate-mcp"]'],
  ['quoted server key', '[mcp_servers."my.server"]\ncommand = "node"\nargs = ["server.js"]\n\n[mcp_servers.plain]\ncommand = "x"\n'],
  ['tab-indented keys', '[mcp_servers.indented]\n\tcommand = "npx"\n\targs = ["-y", "pkg"]\n\n[profiles.fast]\n\tmodel = "o4-mini"\n'],
  ['servers between other tables', '[profiles.deep]\nmodel_reasoning_effort = "high"\n\n[mcp_servers.a]\ncommand = "a"\n\n[agents.reviewer]\ndescription = "Reviews"\n'],
  ['trailing blank lines and a closing comment', '[mcp_servers.dalle]\ncommand = "npx"\nargs = ["-y", "imagegen-mcp"]\n\n# end of MCP servers\n\n\n'],
];

/** Put `text` where `preset` keeps its `scope` file; returns that path. */
async function place(preset: string, scope: EditScope, text: string): Promise<{ path: string; keyPath: string[] }> {
  const target = editTargets({ preset, cwd: ws, home, env }).find((t) => t.scope === scope || (scope === 'project' && t.scope === 'workspace'));
  if (!target) throw new Error(`${preset} has no ${scope} file`);
  await rm(home, { recursive: true, force: true });
  await rm(ws, { recursive: true, force: true });
  await mkdir(home, { recursive: true });
  await mkdir(ws, { recursive: true });
  await mkdir(dirname(target.path), { recursive: true });
  await writeFile(target.path, text);
  return { path: target.path, keyPath: target.keyPath };
}

async function readBack(preset: string) {
  // The added server's `${MY_TOKEN}` is set: Claude Code drops a server whose variable is not.
  const readEnv = { ...env, MY_TOKEN: 'secret' };
  const reader = new ConfigReader({ sources: configSources({ root: ws, home, env: readEnv, preset: resolvePreset(preset) }), env: readEnv, home });
  return (await reader.read()).assembled;
}

const stdio: ServerSpec = { command: 'node', args: ['server.js', '--root', '.'], env: { API_TOKEN: '${MY_TOKEN}' } };

/** add then remove: the file reads back as asked, the others stay, and every byte returns. */
async function roundTrip(preset: string, scope: EditScope, text: string): Promise<void> {
  const { path } = await place(preset, scope, text);
  const before = await readBack(preset);
  // The file parses (server-level issues such as an unset variable are the fixture's own business).
  expect(before.issues.filter((i) => i.server === undefined && i.severity !== 'warning')).toEqual([]);
  const r = await addServer({ preset, cwd: ws, home, env, scope, name: 'added', server: stdio });
  expect(r.file).toBe(path);
  const after = await readBack(preset);
  expect(after.desired.added?.config).toMatchObject({ type: 'stdio', command: 'node', args: ['server.js', '--root', '.'] });
  for (const [name, server] of Object.entries(before.desired)) expect(after.desired[name]?.config).toEqual(server.config);
  await removeServer({ preset, cwd: ws, home, env, scope, name: 'added' });
  expect(await readFile(path, 'utf8')).toBe(text);
}

describe.each(jsonCases)('%s %s scope (%s)', (preset, scope, fixture) => {
  let original: string;
  let keyPath: string[];
  beforeAll(async () => {
    original = (await readFile(join(fixtures, fixture), 'utf8')).replaceAll(FIXTURE_ROOT, '@ROOT@');
    keyPath = editTargets({ preset, cwd: ws, home, env }).find((t) => t.scope === scope || (scope === 'project' && t.scope === 'workspace'))!.keyPath;
  });

  it.each(jsonVariants)('%s: add then remove gives every byte back', async (_label, transform) => {
    // The local scope's key is the workspace path, so it is put in after the formatting.
    const text = transform(original, keyPath.map((k) => (k === ws ? '@ROOT@' : k))).replaceAll('@ROOT@', ws);
    await roundTrip(preset, scope, text);
  });
});

describe('codex TOML', () => {
  it.each(tomlVariants)('%s: add then remove gives every byte back', async (_label, text) => {
    await roundTrip('codex', 'user', text);
  });
});

it('the variants are a dozen per host file, each one different', async () => {
  const original = await readFile(join(fixtures, 'claude-code/project.mcp.json'), 'utf8');
  const texts = new Set(jsonVariants.map(([, t]) => t(original, ['mcpServers'])));
  expect(texts.size).toBe(12);
  expect(new Set(tomlVariants.map(([, t]) => t)).size).toBe(12);
});
