/**
 * docs/presets.md: a preset loads exactly what its host would run. Each fixture
 * below is written for this test in the host's own format, and the expected
 * desired map is checked through `config --json` (what a user sees).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../helpers/cli.js';
import { tempDirAll } from '../helpers/temp-dir.js';

interface Row {
  name: string;
  type: string;
  config: Record<string, unknown>;
}
interface Issue {
  file: string;
  server?: string;
  field?: string;
  message: string;
  code?: string;
  severity?: string;
}
interface Doc {
  servers: Row[];
  issues: Issue[];
}

let home: string;
let ws: string;

async function put(path: string, text: string): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  return path;
}

async function desired(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ws): Promise<{ by: Record<string, Row>; doc: Doc; stdout: string }> {
  const r = await runCliCaptured(['config', '--json', '--cwd', cwd, ...args], { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), PATH: process.env.PATH, ...env }, cwd);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as Doc;
  return { by: Object.fromEntries(doc.servers.map((s) => [s.name, s])), doc, stdout: r.stdout };
}

const issueOf = (doc: Doc, server: string) => doc.issues.find((i) => i.server === server);

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'mcpr-formats-home-'));
  ws = await mkdtemp(join(tmpdir(), 'mcpr-formats-ws-'));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
  await rm(ws, { recursive: true, force: true });
});

describe('gemini / qwen: $VAR and ${VAR}, unset kept as written; httpUrl > url (SSE) > command', () => {
  beforeAll(async () => {
    const text = JSON.stringify({
      mcpServers: {
        kept: { command: 'node', args: ['--root=${FMT_UNSET}', '$FMT_SET', '${FMT_SET}', '${FMT_SET:-x}'] },
        'both-urls': { httpUrl: 'http://127.0.0.1:9/mcp', url: 'http://127.0.0.1:9/sse', command: 'node' },
        sse: { url: 'http://127.0.0.1:9/sse', command: 'node' },
        trusted: { command: 'node', trust: true, timeout: 1500, oauth: { enabled: true } },
      },
    });
    await put(join(ws, '.gemini', 'settings.json'), text);
    await put(join(ws, '.qwen', 'settings.json'), text);
  });

  it.each(['gemini', 'qwen'])('%s', async (preset) => {
    const { by, doc } = await desired(['--preset', preset], { FMT_SET: 'val' });
    expect(Object.keys(by).sort()).toEqual(['both-urls', 'kept', 'sse', 'trusted']);
    // Gemini has no `:-` defaults: `${FMT_SET:-x}` names a variable called "FMT_SET:-x", unset, so kept.
    expect(by.kept!.config.args).toEqual(['--root=${FMT_UNSET}', 'val', 'val', '${FMT_SET:-x}']);
    expect([by['both-urls']!.type, by['both-urls']!.config.url]).toEqual(['http', 'http://127.0.0.1:9/mcp']);
    expect([by.sse!.type, by.sse!.config.url, by.sse!.config.command]).toEqual(['sse', 'http://127.0.0.1:9/sse', undefined]);
    expect(by.trusted!.config).toMatchObject({ trust: true, timeout: 1500 });
    // OAuth is not performed here: said so, on the server's own line.
    expect(issueOf(doc, 'trusted')).toMatchObject({ field: 'oauth', severity: 'warning' });
  });
});

describe('claude-desktop: stdio only, no expansion', () => {
  it('keeps ${…} literally, even when set, and skips url entries with a warning', async () => {
    await put(
      join(home, '.config', 'Claude', 'claude_desktop_config.json'),
      JSON.stringify({ mcpServers: { local: { command: 'node', args: ['${FMT_SET}', '${FMT_UNSET}'] }, remote: { url: 'https://example.invalid/mcp' } } }),
    );
    const { by, doc } = await desired(['--preset', 'claude-desktop'], { FMT_SET: 'val' });
    expect(Object.keys(by)).toEqual(['local']);
    expect(by.local!.config.args).toEqual(['${FMT_SET}', '${FMT_UNSET}']);
    const skipped = issueOf(doc, 'remote')!;
    expect(skipped.severity).toBe('warning');
    expect(skipped.message).toMatch(/does not load remote servers .* skipped/);
  });
});

describe('vscode: servers + inputs, ${env:X} and unset ${X} empty, ${config:…}, http falls back to SSE', () => {
  beforeAll(async () => {
    await put(
      join(ws, '.vscode', 'mcp.json'),
      `{
        // VS Code's own layout, with comments.
        "inputs": [{ "type": "promptString", "id": "api-key", "description": "API key", "password": true }],
        "servers": {
          "empty": { "command": "node", "args": ["a\${FMT_UNSET}b", "\${env:FMT_UNSET}", "\${workspaceFolderBasename}", "\${config:demo.level}"] },
          "prompted": { "command": "node", "args": ["--value", "\${input:api-key}"] },
          "undeclared": { "command": "node", "args": ["\${input:nope}"] },
          "web": { "type": "http", "url": "http://127.0.0.1:9/mcp" },
          "old": { "type": "sse", "url": "http://127.0.0.1:9/sse" },
          "watching": { "command": "node", "dev": { "watch": "src/**" } },
        },
      }`,
    );
    await put(join(ws, '.vscode', 'settings.json'), '{ "demo.level": "3" }');
  });

  it('expands as VS Code does and reports an unanswered input with a fix', async () => {
    const { by, doc } = await desired(['--preset', 'vscode']);
    expect(Object.keys(by).sort()).toEqual(['empty', 'old', 'watching', 'web']);
    expect(by.empty!.config.args).toEqual(['ab', '', basename(ws), '3']);
    expect(by.web!.config).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp', fallbackToSse: true });
    expect(by.old!.type).toBe('sse');
    const prompted = issueOf(doc, 'prompted')!;
    expect(prompted).toMatchObject({ field: 'args[1]', code: 'config_unset_variable' });
    expect(prompted.message).toContain('set MCP_RECONCILER_INPUT_API_KEY');
    expect(issueOf(doc, 'undeclared')!.message).toContain('not declared in this file\'s "inputs"');
    // `dev` changes nothing that runs here: no unknown-key warning for it.
    expect(doc.issues.filter((i) => i.severity === 'warning')).toEqual([]);
  });

  it('an answered password input loads the server and is never printed', async () => {
    const { by, stdout } = await desired(['--preset', 'vscode'], { MCP_RECONCILER_INPUT_API_KEY: 'hunter2-plain' });
    expect(by.prompted!.config.args).toEqual(['--value', '<redacted>']);
    expect(stdout).not.toContain('hunter2-plain');
  });
});

describe('cursor: ${env:X} empty when unset, envFile, url is http with SSE fallback', () => {
  it('loads the env file under the explicit env', async () => {
    await put(join(ws, '.env.cursor'), 'FROM_FILE=1\nSHARED=file\n');
    await put(
      join(ws, '.cursor', 'mcp.json'),
      JSON.stringify({
        mcpServers: {
          c: { url: 'http://127.0.0.1:9/mcp' },
          s: { type: 'sse', url: 'http://127.0.0.1:9/sse' },
          e: { command: 'node', args: ['${env:FMT_UNSET}', '${userHome}'], envFile: '${workspaceFolder}/.env.cursor', env: { SHARED: 'explicit' } },
          missing: { command: 'node', envFile: '.env.nowhere' },
        },
      }),
    );
    const { by, doc } = await desired(['--preset', 'cursor']);
    expect(Object.keys(by).sort()).toEqual(['c', 'e', 's']);
    expect(by.c!.config).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp', fallbackToSse: true });
    expect(by.s!.type).toBe('sse');
    expect(by.e!.config.args).toEqual(['', home]);
    // Values are redacted in `config`; the names show the file was loaded.
    expect(Object.keys(by.e!.config.env as object).sort()).toEqual(['FROM_FILE', 'SHARED']);
    expect(by.e!.config.envFile).toBe(join(ws, '.env.cursor'));
    expect(issueOf(doc, 'missing')).toMatchObject({ field: 'envFile' });
    expect(issueOf(doc, 'missing')!.message).toContain('does not exist');
  });
});

describe('cline / roo: timeout in seconds, bare url is SSE, approval lists kept as metadata', () => {
  it('cline', async () => {
    await put(
      join(home, '.config', 'Code', 'User', 'globalStorage', 'saoudrizwan.claude-dev', 'settings', 'cline_mcp_settings.json'),
      JSON.stringify({
        mcpServers: {
          slow: { command: 'node', args: ['${FMT_SET}'], timeout: 90, autoApprove: ['read'], disabled: false, colour: 'red' },
          legacy: { url: 'http://127.0.0.1:9/sse' },
          stream: { type: 'streamableHttp', url: 'http://127.0.0.1:9/mcp' },
        },
      }),
    );
    const { by, doc } = await desired(['--preset', 'cline'], { FMT_SET: 'val' });
    expect(by.slow!.config).toEqual({ type: 'stdio', command: 'node', args: ['${FMT_SET}'], timeout: 90_000, autoApprove: ['read'], disabled: false });
    expect(by.legacy!.type).toBe('sse');
    expect(by.stream!.type).toBe('http');
    const unknown = doc.issues.filter((i) => i.severity === 'warning' && i.server === undefined);
    expect(unknown).toHaveLength(1);
    expect(unknown[0]!.message).toContain('slow.colour');
  });

  it('roo', async () => {
    await put(
      join(ws, '.roo', 'mcp.json'),
      JSON.stringify({
        mcpServers: {
          r: { command: 'node', args: ['${env:FMT_UNSET}', '${env:FMT_SET}'], timeout: 5, alwaysAllow: ['x'], disabledTools: ['rm'] },
          s: { url: 'http://127.0.0.1:9/sse' },
          tooSlow: { command: 'node', timeout: 90_000 },
        },
      }),
    );
    const { by, doc } = await desired(['--preset', 'roo'], { FMT_SET: 'val' });
    expect(by.r!.config).toMatchObject({ args: ['${env:FMT_UNSET}', 'val'], timeout: 5000, autoApprove: ['x'], excludeTools: ['rm'] });
    expect(by.s!.type).toBe('sse');
    // 90 000 seconds is over a day: the host would wait that long, so it is refused with the unit named.
    expect(issueOf(doc, 'tooSlow')!.message).toContain('seconds');
  });
});

describe('claude-code: bare url is invalid, unset ${VAR} is an error, CLAUDE_PLUGIN_ROOT is a host variable', () => {
  beforeAll(async () => {
    await put(
      join(ws, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          bare: { url: 'http://127.0.0.1:9/mcp' },
          typed: { type: 'http', url: 'http://127.0.0.1:9/mcp', headersHelper: 'print-headers' },
          plugin: { command: '${CLAUDE_PLUGIN_ROOT}/server' },
          unset: { command: 'node', args: ['${FMT_UNSET}'] },
          defaulted: { command: 'node', args: ['${FMT_UNSET:-fallback}'] },
          wrapped: { transport: { type: 'sse', url: 'http://127.0.0.1:9/sse' } },
        },
      }),
    );
  });

  it('loads what Claude Code loads', async () => {
    const { by, doc } = await desired(['--preset', 'claude-code']);
    expect(Object.keys(by).sort()).toEqual(['defaulted', 'typed', 'wrapped']);
    expect(by.defaulted!.config.args).toEqual(['fallback']);
    expect([by.wrapped!.type, by.wrapped!.config.url]).toEqual(['sse', 'http://127.0.0.1:9/sse']);
    expect(issueOf(doc, 'bare')).toMatchObject({ field: 'url', code: 'config_invalid' });
    expect(issueOf(doc, 'bare')!.message).toContain('"type": "http"');
    expect(issueOf(doc, 'unset')).toMatchObject({ field: 'args[0]', code: 'config_unset_variable' });
    expect(issueOf(doc, 'plugin')!.message).toContain('set CLAUDE_PLUGIN_ROOT');
    // headersHelper is run at connect time now (test/connection/headers-helper.test.ts): kept on the entry, no warning.
    expect(by.typed!.config.headersHelper).toBe('print-headers');
    expect(doc.issues.find((i) => i.server === 'typed')).toBeUndefined();
  });

  it('the plugin root comes from the environment when the host sets it', async () => {
    const { by } = await desired(['--preset', 'claude-code'], { CLAUDE_PLUGIN_ROOT: '/plug' });
    expect(by.plugin!.config.command).toBe('/plug/server');
  });
});

describe('codex: TOML [mcp_servers.x], startup_timeout_sec, enabled, no expansion', () => {
  it('reads config.toml', async () => {
    await put(
      join(home, '.codex', 'config.toml'),
      [
        'model = "o4-mini"',
        '',
        '[mcp_servers.docs]',
        'command = "node"',
        'args = ["${FMT_SET}"]',
        'startup_timeout_sec = 20',
        'enabled_tools = ["search"]',
        '',
        '[mcp_servers.off]',
        'command = "node"',
        'enabled = false',
        '',
        '[mcp_servers.remote]',
        'url = "http://127.0.0.1:9/mcp"',
        'bearer_token_env_var = "FMT_TOKEN"',
        '',
        '[mcp_servers.nokey]',
        'url = "http://127.0.0.1:9/mcp"',
        'bearer_token_env_var = "FMT_UNSET"',
        '',
      ].join('\n'),
    );
    const { by, doc } = await desired(['--preset', 'codex'], { FMT_SET: 'val', FMT_TOKEN: 'tok' });
    expect(Object.keys(by).sort()).toEqual(['docs', 'off', 'remote']);
    expect(by.docs!.config).toEqual({ type: 'stdio', command: 'node', args: ['${FMT_SET}'], timeout: 20_000, includeTools: ['search'] });
    expect(by.off!.config.disabled).toBe(true);
    expect(by.remote!.config).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: '<redacted>' } });
    expect(issueOf(doc, 'nokey')).toMatchObject({ field: 'bearer_token_env_var', line: 19 });
  });
});

describe('opencode: `mcp`, type local|remote, command as array, enabled, {env:X}', () => {
  it('reads opencode.json', async () => {
    await put(
      join(ws, 'opencode.json'),
      JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        mcp: {
          local: { type: 'local', command: ['node', 'server.js', '{env:FMT_UNSET}', '{env:FMT_SET}'], environment: { A: '1' }, enabled: true },
          remote: { type: 'remote', url: 'http://127.0.0.1:9/mcp', enabled: false },
          bad: { command: ['x'] },
        },
      }),
    );
    const { by, doc } = await desired(['--preset', 'opencode'], { FMT_SET: 'val' });
    expect(Object.keys(by).sort()).toEqual(['local', 'remote']);
    expect(by.local!.config).toEqual({ type: 'stdio', command: 'node', args: ['server.js', '', 'val'], env: { A: '<redacted>' } });
    expect(by.remote!.config).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp', fallbackToSse: true, disabled: true });
    expect(issueOf(doc, 'bad')).toMatchObject({ field: 'type' });
  });
});

describe('zed: context_servers, old and new command forms, extension servers skipped', () => {
  it('reads .zed/settings.json', async () => {
    await put(
      join(ws, '.zed', 'settings.json'),
      `{
        "theme": "One Dark",
        "context_servers": {
          "new": { "source": "custom", "command": "node", "args": ["z.js"], "env": {} },
          "old": { "command": { "path": "node", "args": ["old.js"] }, "settings": {} },
          "ext": { "source": "extension", "settings": { "k": 1 } },
          "remote": { "url": "http://127.0.0.1:9/mcp" },
        },
      }`,
    );
    const { by, doc } = await desired(['--preset', 'zed']);
    expect(Object.keys(by).sort()).toEqual(['new', 'old', 'remote']);
    expect(by.new!.config).toEqual({ type: 'stdio', command: 'node', args: ['z.js'], env: {} });
    expect(by.old!.config).toEqual({ type: 'stdio', command: 'node', args: ['old.js'] });
    expect(by.remote!.type).toBe('http');
    expect(issueOf(doc, 'ext')).toMatchObject({ severity: 'warning' });
  });
});

describe('windsurf: serverUrl, ${env:X}, disabledTools', () => {
  it('reads mcp_config.json', async () => {
    await put(
      join(home, '.codeium', 'windsurf', 'mcp_config.json'),
      JSON.stringify({
        mcpServers: {
          w: { serverUrl: 'http://127.0.0.1:9/mcp', disabledTools: ['x'] },
          u: { url: 'http://127.0.0.1:9/mcp' },
          s: { command: 'node', args: ['${env:FMT_UNSET}'] },
        },
      }),
    );
    const { by, doc } = await desired(['--preset', 'windsurf']);
    expect(Object.keys(by).sort()).toEqual(['s', 'w']);
    expect(by.w!.config).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp', fallbackToSse: true, excludeTools: ['x'] });
    expect(by.s!.config.args).toEqual(['']);
    expect(issueOf(doc, 'u')!.message).toContain('serverUrl');
  });
});

describe('default preset and --config', () => {
  const plain = tempDirAll('mcpr-formats-plain-');

  it('--config FILE with no preset reads mcpServers, and says why `servers` is not read', async () => {
    const file = await put(join(plain.path, 'extra.json'), JSON.stringify({ mcpServers: { a: { command: 'node' } }, servers: { b: { command: 'node' } } }));
    const { by, doc } = await desired(['--config', file], {}, plain.path);
    expect(Object.keys(by)).toEqual(['a']);
    expect(doc.issues.find((i) => i.field === undefined && i.message.includes('`servers`'))?.severity).toBe('warning');
  });

  it('--config-format vscode reads the `servers` key of the same file', async () => {
    const file = join(plain.path, 'extra.json');
    const { by } = await desired(['--config', file, '--config-format', 'vscode'], {}, plain.path);
    expect(Object.keys(by)).toEqual(['b']);
  });

  it('a VS Code-shaped file (servers + inputs) is read as VS Code reads it', async () => {
    const file = await put(join(plain.path, 'shaped.json'), JSON.stringify({ inputs: [], servers: { v: { command: 'node', args: ['${FMT_UNSET}'] } } }));
    const { by } = await desired(['--config', file], {}, plain.path);
    expect(by.v!.config.args).toEqual(['']);
  });

  it('a file named like a host file is read in that host format', async () => {
    const file = await put(join(plain.path, 'claude_desktop_config.json'), JSON.stringify({ mcpServers: { d: { command: 'node', args: ['${FMT_SET}'] } } }));
    const { by } = await desired(['--config', file], { FMT_SET: 'val' }, plain.path);
    expect(by.d!.config.args).toEqual(['${FMT_SET}']);
  });

  it('the default format keeps the named error for an unset ${VAR}', async () => {
    const file = await put(join(plain.path, 'unset.json'), JSON.stringify({ mcpServers: { x: { command: 'node', args: ['${FMT_UNSET}'] } } }));
    const { by, doc } = await desired(['--config', file], {}, plain.path);
    expect(by.x).toBeUndefined();
    expect(issueOf(doc, 'x')).toMatchObject({ code: 'config_unset_variable', field: 'args[0]' });
    expect(issueOf(doc, 'x')!.message).toContain('${FMT_UNSET} is not set and has no default');
  });

  it('an unknown --format is a usage error naming the valid ones', async () => {
    const r = await runCliCaptured(['config', '--cwd', plain.path, '--config-format', 'emacs'], { HOME: home, PATH: process.env.PATH }, plain.path);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown format "emacs"\nhint: use one of: default, claude-code/);
  });
});
