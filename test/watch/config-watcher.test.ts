import { mkdtemp, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchConfigFiles, type ConfigWatcher, type ConfigWatcherOptions } from '../../src/watch/config-watcher.js';
import { waitFor } from '../helpers/processes.js';

/** Long enough after the 300 ms debounce (and chokidar's 100 ms atomic window) that a missed event would have arrived. */
const QUIET_MS = 800;
const quiet = (ms = QUIET_MS): Promise<void> => new Promise((r) => setTimeout(r, ms));

let dir: string;
let watcher: ConfigWatcher | undefined;
let calls: string[][];
let errors: Error[];

function start(files: string[], extra: Partial<ConfigWatcherOptions> = {}): Promise<void> {
  watcher = watchConfigFiles({
    files,
    onChange: (changed) => calls.push(changed),
    onError: (err) => errors.push(err),
    ...extra,
  });
  return watcher.ready;
}

/** Create `name` in the temp dir and watch it (alone); its path. */
async function watched(name: string, content = '{}'): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, content);
  await start([file]);
  return file;
}

/** Wait for the first onChange, then a quiet period for any late one: every call so far. */
async function settledCalls(what: string): Promise<string[][]> {
  await waitFor(() => calls.length > 0, `onChange ${what}`);
  await quiet();
  return calls;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcpr-watch-'));
  calls = [];
  errors = [];
});

afterEach(async () => {
  await watcher?.close();
  watcher = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('watchConfigFiles', () => {
  it('reports a save of a listed file once, with its path', async () => {
    const file = await watched('settings.json');
    await writeFile(file, '{"mcpServers":{}}');
    expect(await settledCalls('after a save')).toEqual([[file]]);
    expect(errors).toEqual([]);
  });

  it('coalesces five quick saves into one onChange', async () => {
    const file = await watched('.mcp.json');
    for (let i = 0; i < 5; i++) {
      await writeFile(file, JSON.stringify({ i }));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await settledCalls('after a burst')).toEqual([[file]]);
  });

  it('reports several files saved in one burst in one call', async () => {
    const a = join(dir, 'a.json');
    const b = join(dir, 'b.yml');
    await writeFile(a, '{}');
    await writeFile(b, '');
    await start([b, a]);
    await writeFile(a, '{"x":1}');
    await writeFile(b, 'x: 1');
    expect(await settledCalls('after two saves')).toEqual([[a, b].sort()]);
  });

  it('treats an atomic save (write temp, rename over) as a change', async () => {
    const file = await watched('mcp.servers.yml', 'a: 1\n');
    const tmp = join(dir, '.mcp.servers.yml.tmp-123');
    await writeFile(tmp, 'a: 2\n');
    await rename(tmp, file);
    expect(await settledCalls('after an atomic save')).toEqual([[file]]);
  });

  it('reports the creation of a file that did not exist at start', async () => {
    const file = join(dir, 'settings.json');
    await start([file]);
    await writeFile(file, '{}');
    await waitFor(() => calls.length > 0, 'onChange after creation');
    expect(calls).toEqual([[file]]);
  });

  it('reports the deletion of a listed file', async () => {
    const file = await watched('settings.json');
    await rm(file);
    await waitFor(() => calls.length > 0, 'onChange after deletion');
    expect(calls).toEqual([[file]]);
  });

  it('reports a file whose directories did not exist at start once they and it are created', async () => {
    const file = join(dir, 'ws', '.app', 'settings.json');
    await start([file]);
    await mkdir(join(dir, 'ws', '.app'), { recursive: true });
    await writeFile(file, '{}');
    await waitFor(() => calls.flat().includes(file), 'onChange after mkdir -p and write');
    // The watch has moved down into the new directory: a later save is seen too.
    const before = calls.length;
    await quiet();
    await writeFile(file, '{"a":1}');
    await waitFor(() => calls.length > before, 'onChange after a save in the new directory');
    expect(calls.every((c) => c.length === 1 && c[0] === file)).toBe(true);
  });

  it('follows a directory that is deleted and created again', async () => {
    const sub = join(dir, '.app');
    const file = join(sub, 'settings.json');
    await mkdir(sub);
    await writeFile(file, '{}');
    await start([file]);
    await rm(sub, { recursive: true });
    await waitFor(() => calls.length > 0, 'onChange after the directory was deleted');
    await quiet();
    const before = calls.length;
    await mkdir(sub);
    await writeFile(file, '{"b":2}');
    await waitFor(() => calls.length > before, 'onChange after the directory came back');
    expect(calls.flat().every((p) => p === file)).toBe(true);
  });

  it('ignores other files in a watched directory', async () => {
    const file = await watched('settings.json');
    await writeFile(join(dir, 'other.json'), '{}');
    await writeFile(join(dir, 'settings.json.bak'), '{}');
    await mkdir(join(dir, 'subdir'));
    await quiet();
    expect(calls).toEqual([]);
    // Control: the watcher is live.
    await writeFile(file, '{"a":1}');
    await waitFor(() => calls.length > 0, 'onChange of the listed file');
    expect(calls).toEqual([[file]]);
  });

  it('never reports a path the ignore callback rejects', async () => {
    const file = join(dir, 'settings.json');
    const store = join(dir, 'approvals.json');
    await writeFile(file, '{}');
    await writeFile(store, '{}');
    await start([file, store], { ignore: (p) => p === store });
    await writeFile(store, '{"x":1}');
    await quiet();
    expect(calls).toEqual([]);
    await writeFile(file, '{"a":1}');
    expect(await settledCalls('of the listed file')).toEqual([[file]]);
  });

  it('setFiles adds new files (also in a new directory) and drops removed ones', async () => {
    const a = join(dir, 'a.json');
    const other = join(dir, 'other');
    const b = join(other, 'b.json');
    await mkdir(other);
    await writeFile(a, '{}');
    await writeFile(b, '{}');
    await start([a]);
    await watcher!.setFiles([b]);
    await quiet(400);
    expect(calls).toEqual([]); // setFiles reports nothing by itself
    await writeFile(a, '{"dropped":true}');
    await writeFile(b, '{"added":true}');
    expect(await settledCalls('of the added file')).toEqual([[b]]);
  });

  it('calls nothing after close(), even for saves already pending', async () => {
    const file = join(dir, 'settings.json');
    await writeFile(file, '{}');
    await start([file], { debounceMs: 500 });
    await writeFile(file, '{"a":1}');
    const closing = watcher!.close();
    expect(watcher!.close()).toBe(closing); // memoised
    await closing;
    await writeFile(file, '{"a":2}');
    await rm(file);
    await quiet();
    expect(calls).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('flushes a file written continuously after maxWaitMs', async () => {
    const file = join(dir, 'settings.json');
    await writeFile(file, '{}');
    await start([file], { debounceMs: 300, maxWaitMs: 800 });
    // Writes every 50 ms never leave the 300 ms quiet gap the debounce waits for;
    // only the max wait can produce a call while they go on.
    let writes = 0;
    while (calls.length === 0 && writes < 200) {
      await writeFile(file, JSON.stringify({ writes }));
      writes++;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0]).toEqual([file]);
  });

  it('routes an exception thrown by onChange to onError and keeps watching', async () => {
    const file = join(dir, 'settings.json');
    await writeFile(file, '{}');
    let n = 0;
    await start([file], {
      onChange: () => {
        n++;
        if (n === 1) throw new Error('listener broke');
      },
    });
    await writeFile(file, '{"a":1}');
    await waitFor(() => errors.length > 0, 'the listener error');
    expect(errors[0]?.message).toBe('listener broke');
    await quiet(400);
    await writeFile(file, '{"a":2}');
    await waitFor(() => n === 2, 'a second onChange');
  });
});
