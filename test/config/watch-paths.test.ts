/**
 * A change to a file the config reads besides itself (`envFile`, opencode's
 * `{file:path}`) reloads like a save of the config file itself.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSource } from '../../src/config/load.js';
import { ConfigReader } from '../../src/config/reader.js';
import { watchConfigFiles, type ConfigWatcher } from '../../src/watch/config-watcher.js';
import { Harness } from '../controller/support.js';

const h = new Harness();
const watchers: ConfigWatcher[] = [];
afterAll(async () => {
  await Promise.all(watchers.map((w) => w.close()));
  await h.cleanup();
});

function write(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

describe('extraWatchPaths', () => {
  it('a source reports its envFile (also a missing one) and opencode {file:…} paths, absolute', async () => {
    const ws = h.workspace();
    const vscode = join(ws.root, '.vscode', 'mcp.json');
    write(join(ws.root, '.env'), 'A=1\n');
    write(vscode, JSON.stringify({ servers: { a: { command: 'x', envFile: '${workspaceFolder}/.env' }, b: { command: 'x', envFile: 'missing.env' } } }));
    const r = await loadSource({ scope: 'workspace', path: vscode, format: 'vscode', root: ws.root }, {});
    expect(r.extraWatchPaths).toEqual([join(ws.root, '.env'), join(ws.root, 'missing.env')].sort());
    const oc = join(ws.root, 'opencode.json');
    write(oc, JSON.stringify({ mcp: { r: { type: 'remote', url: 'http://h/mcp', headers: { Authorization: 'Bearer {file:secrets/token}' } } } }));
    const o = await loadSource({ scope: 'project', path: oc, format: 'opencode', root: ws.root }, {});
    expect(o.extraWatchPaths).toEqual([join(ws.root, 'secrets', 'token')]);
  });

  it('the reader returns them after the sources\' own files, each once, and keeps a broken file\'s last good ones', async () => {
    const ws = h.workspace();
    const vscode = join(ws.root, '.vscode', 'mcp.json');
    const mcp = join(ws.root, '.mcp.json');
    write(vscode, JSON.stringify({ servers: { a: { command: 'x', envFile: 'b.env' }, b: { command: 'x', envFile: 'a.env' } } }));
    const reader = new ConfigReader({
      sources: [
        { scope: 'project', path: mcp, root: ws.root },
        { scope: 'workspace', path: vscode, format: 'vscode', root: ws.root },
      ],
      env: {},
    });
    expect((await reader.read()).watchPaths).toEqual([mcp, vscode, join(ws.root, 'a.env'), join(ws.root, 'b.env')]);
    write(vscode, '{ not json');
    expect((await reader.read()).watchPaths).toEqual([mcp, vscode, join(ws.root, 'a.env'), join(ws.root, 'b.env')]);
    write(vscode, JSON.stringify({ servers: { a: { command: 'x' } } }));
    expect((await reader.read()).watchPaths).toEqual([mcp, vscode]);
  });

  it('with a real watcher, editing the env file is reported as a change', async () => {
    const ws = h.workspace();
    const vscode = join(ws.root, '.vscode', 'mcp.json');
    const envFile = join(ws.root, 'conf', 'server.env');
    write(envFile, 'A=1\n');
    write(vscode, JSON.stringify({ servers: { a: { command: 'x', envFile: 'conf/server.env' } } }));
    let changed: (files: string[]) => void = () => {};
    const seen = new Promise<string[]>((resolve) => (changed = resolve));
    const watcher = watchConfigFiles({ files: [vscode], debounceMs: 50, onChange: (files) => changed(files) });
    watchers.push(watcher);
    await watcher.ready;
    const { watchPaths } = await new ConfigReader({ sources: [{ scope: 'workspace', path: vscode, format: 'vscode', root: ws.root }], env: {} }).read();
    await watcher.setFiles(watchPaths);
    expect(watcher.files()).toEqual([vscode, envFile]);
    write(envFile, 'A=2\n');
    expect(await seen).toEqual([envFile]);
  });

  it('through the controller: saving the env file reloads and the server gets the new env', async () => {
    const ws = h.workspace();
    const envFile = join(ws.root, 'server.env');
    write(envFile, 'GREETING=one\n');
    // Disabled, so nothing is spawned: the desired config is what is checked.
    write(join(ws.root, '.vscode', 'mcp.json'), JSON.stringify({ servers: { s: { command: 'node', envFile: '${workspaceFolder}/server.env', disabled: true } } }));
    const c = h.controller(ws, { preset: 'vscode', watch: true, debounceMs: 50 });
    await c.start();
    expect(c.config().desired.s?.config.env).toEqual({ GREETING: 'one' });
    const reloaded = new Promise<void>((resolve) => {
      const off = c.on('reconciled', () => {
        if (c.config().desired.s?.config.env?.GREETING === 'two') {
          off();
          resolve();
        }
      });
    });
    write(envFile, 'GREETING=two\n');
    await reloaded;
    expect(c.config().desired.s?.config.env).toEqual({ GREETING: 'two' });
  });
});
