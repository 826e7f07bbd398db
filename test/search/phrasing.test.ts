/**
 * Tool search on the tool lists of published servers (bench/tool-corpus.json,
 * listed over stdio by bench/collect-corpus.ts): tasks phrased the way agents
 * and users write them find the tool in the top five, though they share
 * few words with its name.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { ToolRegistry } from '../../src/registry/registry.js';
import { ToolSearch } from '../../src/search/tool-search.js';

const corpus = JSON.parse(readFileSync(fileURLToPath(new URL('../../bench/tool-corpus.json', import.meta.url)), 'utf8')) as { server: string; tools: Tool[] }[];
const registry = new ToolRegistry();
for (const s of corpus) registry.commit(s.server, 1, { tools: s.tools, prompts: [] });
const search = ToolSearch.build(registry);
afterAll(() => search.close());

function top5(query: string): string[] {
  return search.search(query, { limit: 5 }).map((m) => `${m.tool.server}/${m.tool.rawName}`);
}

describe('tool search on real phrasing', () => {
  it('a file name or URL in the task says what kind of target, not which tool', () => {
    // "notes.md" is a file to write, not the words "notes" and "md".
    expect(top5('save this text into notes.md on disk').some((t) => ['filesystem/write_file', 'desktop-commander/write_file'].includes(t))).toBe(true);
    expect(top5('go to https://example.com in the browser').some((t) => /navigate/.test(t))).toBe(true);
  });

  it('a word with many synonyms does not drown the other words of the task', () => {
    expect(top5('run npm test in a shell')).toContain('desktop-commander/start_process');
    expect(top5('make a new folder called build').some((t) => /create_directory/.test(t))).toBe(true);
    expect(top5('reply to the discussion on bug 42 in github')).toContain('github/add_issue_comment');
  });
});
