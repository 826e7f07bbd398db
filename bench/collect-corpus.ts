/**
 * Collects the tool corpus of the tool-search bench: the `tools/list` of
 * published MCP servers, each started over stdio from a node_modules folder
 * with no credentials and no network, saved as bench/tool-corpus.json.
 *
 *   node dist/bench/collect-corpus.js [--modules DIR]
 *
 * The packages are looked up in this repository's node_modules, then in
 * each DIR; those not installed are skipped with a line saying so. Only
 * servers whose tools/list needs no network are listed here (a server
 * that calls its API while listing is left out). The corpus is
 * checked in, so the bench itself needs none of them.
 */
import { existsSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** A published server: its server name in the corpus, the package, and the arguments it needs to start. */
interface Published {
  server: string;
  pkg: string;
  args?: (scratch: string) => string[];
  env?: Record<string, string>;
}

const PUBLISHED: Published[] = [
  { server: 'everything', pkg: '@modelcontextprotocol/server-everything', args: () => ['stdio'] },
  { server: 'filesystem', pkg: '@modelcontextprotocol/server-filesystem', args: (d) => [d] },
  { server: 'memory', pkg: '@modelcontextprotocol/server-memory' },
  { server: 'sequential-thinking', pkg: '@modelcontextprotocol/server-sequential-thinking' },
  { server: 'github', pkg: '@modelcontextprotocol/server-github', env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'unused' } },
  { server: 'gitlab', pkg: '@modelcontextprotocol/server-gitlab', env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'unused' } },
  { server: 'slack', pkg: '@modelcontextprotocol/server-slack', env: { SLACK_BOT_TOKEN: 'unused', SLACK_TEAM_ID: 'T0' } },
  { server: 'playwright', pkg: '@playwright/mcp' },
  { server: 'chrome-devtools', pkg: 'chrome-devtools-mcp' },
  { server: 'notion', pkg: '@notionhq/notion-mcp-server' },
  { server: 'desktop-commander', pkg: '@wonderwhy-er/desktop-commander' },
  { server: 'git', pkg: '@cyanheads/git-mcp-server', env: { MCP_TRANSPORT_TYPE: 'stdio', MCP_LOG_LEVEL: 'error' } },
  { server: 'kubernetes', pkg: 'mcp-server-kubernetes' },
  { server: 'browsermcp', pkg: '@browsermcp/mcp' },
  { server: 'playwright-ea', pkg: '@executeautomation/playwright-mcp-server' },
  { server: 'puppeteer', pkg: '@modelcontextprotocol/server-puppeteer' },
  { server: 'azure-devops', pkg: '@tiberriver256/mcp-server-azure-devops', env: { AZURE_DEVOPS_ORG_URL: 'https://dev.azure.com/unused', AZURE_DEVOPS_AUTH_METHOD: 'pat', AZURE_DEVOPS_PAT: 'unused' } },
];

/** One server's entry in the corpus. */
export interface CorpusServer {
  server: string;
  pkg: string;
  version: string;
  tools: Pick<Tool, 'name' | 'description' | 'inputSchema'>[];
}

function binOf(modules: string, pkg: string): { script: string; version: string } | undefined {
  const dir = join(modules, pkg);
  const manifest = join(dir, 'package.json');
  if (!existsSync(manifest)) return undefined;
  const json = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string; bin?: string | Record<string, string>; main?: string };
  const bin = typeof json.bin === 'string' ? json.bin : Object.values(json.bin ?? {})[0];
  const script = bin ?? json.main;
  return script ? { script: resolve(dir, script), version: json.version } : undefined;
}

async function list(p: Published, script: string): Promise<CorpusServer['tools']> {
  const scratch = mkdtempSync(join(tmpdir(), 'corpus-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [script, ...(p.args?.(scratch) ?? [])],
    env: { PATH: process.env.PATH ?? '', HOME: scratch, ...(p.env ?? {}) },
    cwd: scratch,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'corpus', version: '0' });
  try {
    await client.connect(transport, { timeout: 30_000 });
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: 30_000 });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools.map((t) => ({ name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), inputSchema: t.inputSchema }));
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const here = dirname(fileURLToPath(import.meta.url));
  const repo = resolve(here, '..', '..');
  const dirs = [join(repo, 'node_modules')];
  process.argv.forEach((a, i) => {
    if (a === '--modules' && process.argv[i + 1]) dirs.push(resolve(process.argv[i + 1]!));
  });
  const out: CorpusServer[] = [];
  for (const p of PUBLISHED) {
    const bin = dirs.map((d) => binOf(d, p.pkg)).find((b) => b !== undefined);
    if (!bin) {
      console.log(`skipped ${p.pkg}: not installed in ${dirs.join(' or ')}`);
      continue;
    }
    try {
      const tools = await list(p, bin.script);
      out.push({ server: p.server, pkg: p.pkg, version: bin.version, tools });
      console.log(`${p.server} (${p.pkg}@${bin.version}): ${tools.length} tools`);
    } catch (err) {
      console.log(`skipped ${p.pkg}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const file = join(repo, 'bench', 'tool-corpus.json');
  writeFileSync(file, `${JSON.stringify(out, null, 1)}\n`);
  console.log(`${out.reduce((n, s) => n + s.tools.length, 0)} tools from ${out.length} servers → ${file}`);
}

await main();
