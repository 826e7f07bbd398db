import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSource, parseSourceText, type InputSpec } from '../../src/config/load.js';
import type { ConfigSource } from '../../src/config/sources.js';
import { approvalHash, fingerprint } from '../../src/config/identity.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-inputs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const vscodeFile = JSON.stringify({
  inputs: [
    { type: 'promptString', id: 'token', description: 'Service token', password: true },
    { type: 'promptString', id: 'region', default: 'eu' },
  ],
  servers: {
    svc: { command: 'node', args: ['--region', '${input:region}'], env: { TOKEN: '${input:token}' } },
    other: { command: 'node' },
  },
});

describe('resolveInput (VS Code inputs, host variables)', () => {
  it('asks the hook once per input with its declaration, and loads the server with the answers', async () => {
    const path = join(dir, 'mcp.json');
    await writeFile(path, vscodeFile);
    const asked: [string, InputSpec][] = [];
    const r = await loadSource({ scope: 'workspace', path, format: 'vscode' }, {}, {
      resolveInput: (id, spec) => {
        asked.push([id, spec]);
        return id === 'token' ? 's3cret' : 'us';
      },
    });
    expect(asked.map(([id]) => id).sort()).toEqual(['region', 'token']);
    expect(asked.find(([id]) => id === 'token')![1]).toMatchObject({ type: 'promptString', description: 'Service token', password: true, file: path });
    expect(r.issues).toEqual([]);
    expect(r.servers.svc).toEqual({ type: 'stdio', command: 'node', args: ['--region', 'us'], env: { TOKEN: 's3cret' } });
    // The password answer is listed so that nothing prints it.
    expect(r.secrets).toEqual(['s3cret']);
  });

  it('a hook that answers nothing (or throws) leaves the server skipped with the issue, others load', async () => {
    const path = join(dir, 'mcp.json');
    const r = await loadSource({ scope: 'workspace', path, format: 'vscode' }, {}, {
      resolveInput: (id) => {
        if (id === 'token') throw new Error('user cancelled');
        return undefined;
      },
    });
    expect(Object.keys(r.servers)).toEqual(['other']);
    expect(r.issues.map((i) => [i.server, i.field, i.code])).toEqual([
      ['svc', 'args[1]', 'config_unset_variable'],
      ['svc', 'env.TOKEN', 'config_unset_variable'],
    ]);
    expect(r.pendingInputs?.map((p) => p.variable).sort()).toEqual(['input:region', 'input:token']);
  });

  it('Claude Code plugin root goes through the same hook as a host variable', async () => {
    const path = join(dir, '.mcp.json');
    await writeFile(path, JSON.stringify({ mcpServers: { p: { command: '${CLAUDE_PLUGIN_ROOT}/bin/server' } } }));
    const r = await loadSource({ scope: 'project', path, format: 'claude-code' }, {}, {
      resolveInput: (id, spec) => (id === 'CLAUDE_PLUGIN_ROOT' && spec.type === 'hostVariable' ? '/plugins/x' : undefined),
    });
    expect(r.servers.p?.command).toBe('/plugins/x/bin/server');
  });
});

describe('fields that change behaviour', () => {
  const src = (path: string, format: ConfigSource['format']): ConfigSource => ({ scope: 'user', path, format, root: dir });

  it('envFile: loaded, and the entry\'s own env wins over it', async () => {
    await writeFile(join(dir, '.env'), '# comment\nA=from-file\nB="quoted value"\n');
    const r = parseSourceText(JSON.stringify({ servers: { s: { command: 'x', envFile: '${workspaceFolder}/.env', env: { A: 'explicit' } } } }), src(join(dir, 'mcp.json'), 'vscode'), {});
    expect(r.issues).toEqual([]);
    expect(r.servers.s?.env).toEqual({ A: 'explicit', B: 'quoted value' });
    // The path stays on the entry, absolute, so approval prompts and `config` show where env came from.
    expect(r.servers.s?.envFile).toBe(join(dir, '.env'));
  });

  it('codex env_vars pass named variables through; a TOML syntax error is fatal with a position', () => {
    const file = join(dir, 'config.toml');
    const r = parseSourceText('[mcp_servers.a]\ncommand = "x"\nenv_vars = ["KEEP", "ABSENT"]\n', src(file, 'codex'), { KEEP: 'k' });
    expect(r.servers.a?.env).toEqual({ KEEP: 'k' });
    const bad = parseSourceText('[mcp_servers.a]\ncommand = \n', src(file, 'codex'), {});
    expect(bad.fatal).toBe(true);
    expect(bad.issues[0]).toMatchObject({ line: 2 });
    expect(bad.issues[0]!.message).toMatch(/^TOML syntax error/);
  });

  it('codex header and env tables keep a `__proto__` name as an ordinary key', () => {
    const text = ['[mcp_servers.a]', 'url = "http://h/mcp"', '[mcp_servers.a.http_headers]', '"__proto__" = "x"', 'X-Plain = "y"'].join('\n');
    const r = parseSourceText(text, src(join(dir, 'config.toml'), 'codex'), {});
    const headers = r.servers.a?.headers as Record<string, string>;
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    expect(Object.keys(headers).sort()).toEqual(['X-Plain', '__proto__']);
  });

  it('a seconds timeout (Cline) over 24 hours is refused in seconds; a millisecond one (Gemini) is kept as is', () => {
    const cline = parseSourceText(JSON.stringify({ mcpServers: { a: { command: 'x', timeout: 86_401 }, b: { command: 'x', timeout: 0.5 } } }), src(join(dir, 'c.json'), 'cline'), {});
    expect(cline.issues[0]).toMatchObject({ server: 'a', field: 'timeout' });
    expect(cline.issues[0]!.message).toContain('86400 seconds');
    expect(cline.servers.b?.timeout).toBe(500);
    const gemini = parseSourceText(JSON.stringify({ mcpServers: { a: { command: 'x', timeout: 500 } } }), src(join(dir, 'g.json'), 'gemini'), {});
    expect(gemini.servers.a?.timeout).toBe(500);
  });

  it('startup / idleTimeoutMs pass through in every host format, without an unknown-key warning', () => {
    const entry = { command: 'x', startup: 'lazy', idleTimeoutMs: 60_000 };
    const docs: Record<string, [string, string]> = {
      vscode: ['mcp.json', JSON.stringify({ servers: { a: entry } })],
      cursor: ['mcp.json', JSON.stringify({ mcpServers: { a: entry } })],
      gemini: ['settings.json', JSON.stringify({ mcpServers: { a: entry } })],
      'claude-code': ['.mcp.json', JSON.stringify({ mcpServers: { a: entry } })],
      'claude-desktop': ['claude_desktop_config.json', JSON.stringify({ mcpServers: { a: entry } })],
      cline: ['c.json', JSON.stringify({ mcpServers: { a: entry } })],
      zed: ['settings.json', JSON.stringify({ context_servers: { a: entry } })],
      opencode: ['opencode.json', JSON.stringify({ mcp: { a: { type: 'local', command: ['x'], startup: 'lazy', idleTimeoutMs: 60_000 } } })],
      codex: ['config.toml', '[mcp_servers.a]\ncommand = "x"\nstartup = "lazy"\nidleTimeoutMs = 60000\n'],
    };
    for (const [format, [name, text]] of Object.entries(docs)) {
      const r = parseSourceText(text, src(join(dir, name), format as ConfigSource['format']), {});
      expect([format, r.issues]).toEqual([format, []]);
      expect([format, r.servers.a]).toMatchObject([format, { startup: 'lazy', idleTimeoutMs: 60_000 }]);
    }
    // Still validated: a wrong value is an error on the field, whatever the host.
    const bad = parseSourceText(JSON.stringify({ servers: { a: { command: 'x', startup: 'later' } } }), src(join(dir, 'mcp.json'), 'vscode'), {});
    expect(bad.issues[0]).toMatchObject({ server: 'a', field: 'startup' });
  });

  it('singleton (docs/cluster.md) passes through in every host format, outside the fingerprint and the approval hash', () => {
    const docs: Record<string, [string, string]> = {
      vscode: ['mcp.json', JSON.stringify({ servers: { a: { command: 'x', singleton: true } } })],
      'claude-code': ['.mcp.json', JSON.stringify({ mcpServers: { a: { command: 'x', singleton: true } } })],
      zed: ['settings.json', JSON.stringify({ context_servers: { a: { command: 'x', singleton: true } } })],
      opencode: ['opencode.json', JSON.stringify({ mcp: { a: { type: 'local', command: ['x'], singleton: true } } })],
      codex: ['config.toml', '[mcp_servers.a]\ncommand = "x"\nsingleton = true\n'],
    };
    for (const [format, [name, text]] of Object.entries(docs)) {
      const r = parseSourceText(text, src(join(dir, name), format as ConfigSource['format']), {});
      expect([format, r.issues]).toEqual([format, []]);
      expect([format, r.servers.a]).toMatchObject([format, { singleton: true }]);
    }
    expect(fingerprint({ command: 'x', singleton: true })).toBe(fingerprint({ command: 'x' }));
    expect(approvalHash({ command: 'x', singleton: true })).toBe(approvalHash({ command: 'x' }));
    const bad = parseSourceText(JSON.stringify({ mcpServers: { a: { command: 'x', singleton: 'yes' } } }), src(join(dir, 'b.json'), 'claude-code'), {});
    expect(bad.issues[0]).toMatchObject({ server: 'a', field: 'singleton' });
  });

  it('a host type spelling the host does not accept is an error naming the accepted ones', () => {
    const r = parseSourceText(JSON.stringify({ mcpServers: { a: { type: 'streamable-http', url: 'http://h/mcp' } } }), src(join(dir, 'x.json'), 'claude-code'), {});
    expect(r.servers).toEqual({});
    expect(r.issues[0]).toMatchObject({ server: 'a', field: 'type' });
    expect(r.issues[0]!.message).toContain('"stdio", "sse", "http"');
  });
});
