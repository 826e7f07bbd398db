/**
 * The context-budget bench (`npm run bench` runs it after the others;
 * alone: `node dist/bench/tool-budget.js [--quality]`):
 *
 * - tokens exposed at session start by `all`, `search` and `auto` (N=128),
 *   on the tools of published servers (bench/tool-corpus.json, collected by
 *   bench/collect-corpus.ts);
 * - search quality on bench/tool-queries.json (tasks in an agent's words
 *   that avoid the tool's own name) and on bench/tool-queries-heldout.json
 *   (terse, casual and question phrasing, kept out of tuning): recall@1,
 *   recall@5, MRR, with and without the WordNet expansion;
 * - search latency p50 / p99 over 5 000 tools, and the time to re-index one
 *   relisting server of 50.
 *
 * Results go to stdout and bench/tool-budget-results.json.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RegisteredTool } from '../src/registry/registry.js';
import { ToolRegistry } from '../src/registry/registry.js';
import { ToolSearch, type ToolSource } from '../src/search/tool-search.js';
import { selectTools, searchPairTokens } from '../src/search/exposure.js';
import { TOKEN_ENCODING } from '../src/registry/tokens.js';

const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));

interface CorpusServer {
  server: string;
  pkg: string;
  version: string;
  tools: Tool[];
}

interface Query {
  query: string;
  /** `server/tool` names that answer it. */
  expect: string[];
}

function loadCorpus(): CorpusServer[] {
  return JSON.parse(readFileSync(`${BENCH_DIR}tool-corpus.json`, 'utf8')) as CorpusServer[];
}

/** A registry holding `servers`' tools, as a controller's would. */
function registryOf(servers: readonly CorpusServer[]): ToolRegistry {
  const r = new ToolRegistry();
  for (const s of servers) {
    const res = r.commit(s.server, 1, { tools: s.tools, prompts: [] });
    if (!res.ok) throw res.error;
  }
  return r;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

/** recall@1, recall@5 and MRR of `search` on `queries`; `misses` lists the queries whose answer is not in the top 5. */
export function quality(search: ToolSearch, queries: readonly Query[]): { recall1: number; recall5: number; mrr: number; misses: string[] } {
  let r1 = 0;
  let r5 = 0;
  let rr = 0;
  const misses: string[] = [];
  for (const q of queries) {
    const hits = search.search(q.query, { limit: 10 }).map((m) => `${m.tool.server}/${m.tool.rawName}`);
    const rank = hits.findIndex((h) => q.expect.includes(h));
    if (rank === 0) r1++;
    if (rank >= 0 && rank < 5) r5++;
    else misses.push(`${q.query} → ${hits.slice(0, 3).join(', ')}`);
    if (rank >= 0) rr += 1 / (rank + 1);
  }
  const n = queries.length;
  return { recall1: round(r1 / n), recall5: round(r5 / n), mrr: round(rr / n), misses };
}

/** Copies of the corpus's servers under new names until there are `count` tools (or `servers` servers). */
function replicate(corpus: readonly CorpusServer[], until: { tools?: number; servers?: number }): CorpusServer[] {
  const out: CorpusServer[] = [];
  let tools = 0;
  for (let copy = 0; ; copy++) {
    for (const s of corpus) {
      if ((until.tools !== undefined && tools >= until.tools) || (until.servers !== undefined && out.length >= until.servers)) return out;
      out.push({ ...s, server: copy === 0 ? s.server : `${s.server}-${copy}` });
      tools += s.tools.length;
    }
  }
}

function tokensAtStart(tools: readonly RegisteredTool[]): Record<string, number> {
  const all = selectTools(tools, { mode: 'all' }).tokens;
  const search = selectTools(tools, { mode: 'search' }).tokens;
  const auto = selectTools(tools, { mode: 'auto', maxTools: 128 });
  return { all, search, auto: auto.tokens, autoTools: auto.tools.length, searchPair: searchPairTokens() };
}

function main(): void {
  const onlyQuality = process.argv.includes('--quality');
  const corpus = loadCorpus();
  const queries = JSON.parse(readFileSync(`${BENCH_DIR}tool-queries.json`, 'utf8')) as Query[];
  const registry = registryOf(corpus);
  const tools = registry.tools();
  const results: Record<string, unknown> = { encoding: TOKEN_ENCODING, servers: corpus.length, tools: tools.length, queries: queries.length };

  const withWordnet = ToolSearch.build(registry);
  const q = quality(withWordnet, queries);
  const plain = quality(ToolSearch.build(registry, { wordnet: false }), queries);
  results.quality = { recall1: q.recall1, recall5: q.recall5, mrr: q.mrr, withoutWordnet: { recall1: plain.recall1, recall5: plain.recall5, mrr: plain.mrr } };
  console.log(`search quality, ${queries.length} queries over ${tools.length} tools of ${corpus.length} published servers:`);
  console.log(`  recall@1 ${q.recall1}  recall@5 ${q.recall5}  MRR ${q.mrr}   (without WordNet: ${plain.recall1} / ${plain.recall5} / ${plain.mrr})`);
  if (process.argv.includes('--misses')) for (const m of q.misses) console.log(`  miss: ${m}`);
  // Held out: written in another style (terse, casual, questions) and never tuned on.
  const heldOut = JSON.parse(readFileSync(`${BENCH_DIR}tool-queries-heldout.json`, 'utf8')) as Query[];
  const h = quality(withWordnet, heldOut);
  const hPlain = quality(ToolSearch.build(registry, { wordnet: false }), heldOut);
  results.heldOut = { queries: heldOut.length, recall1: h.recall1, recall5: h.recall5, mrr: h.mrr, withoutWordnet: { recall1: hPlain.recall1, recall5: hPlain.recall5, mrr: hPlain.mrr } };
  console.log(`held-out queries (${heldOut.length}, another style):`);
  console.log(`  recall@1 ${h.recall1}  recall@5 ${h.recall5}  MRR ${h.mrr}   (without WordNet: ${hPlain.recall1} / ${hPlain.recall5} / ${hPlain.mrr})`);
  if (process.argv.includes('--misses')) for (const m of h.misses) console.log(`  miss: ${m}`);
  if (onlyQuality) return;

  const tokens = tokensAtStart(tools);
  results.tokensAtStart = { ...tokens, searchRatio: round(tokens.search! / tokens.all!), autoRatio: round(tokens.auto! / tokens.all!) };
  console.log(`tokens at session start (${tools.length} tools, ${TOKEN_ENCODING}): all ${tokens.all}, search ${tokens.search} (${round((100 * tokens.search!) / tokens.all!, 1)} %), auto N=128 ${tokens.auto} (${round((100 * tokens.auto!) / tokens.all!, 1)} %, ${tokens.autoTools} tools besides the pair)`);

  // Latency at 5 000 tools: the corpus's servers copied under other names.
  const big = registryOf(replicate(corpus, { tools: 5_000 }));
  const bigSearch = ToolSearch.build(big);
  for (const x of queries) bigSearch.search(x.query); // warm: WordNet lookups are memoised per word
  const samples: number[] = [];
  for (let round_ = 0; round_ < 5; round_++) {
    for (const x of queries) {
      const t0 = performance.now();
      bigSearch.search(x.query, { limit: 10 });
      samples.push(performance.now() - t0);
    }
  }
  samples.sort((a, b) => a - b);
  results.latency = { tools: big.tools().length, searches: samples.length, p50Ms: round(percentile(samples, 50)), p99Ms: round(percentile(samples, 99)) };
  console.log(`search latency over ${big.tools().length} tools: p50 ${round(percentile(samples, 50))} ms, p99 ${round(percentile(samples, 99))} ms (${samples.length} searches)`);

  // Cold: the first search of a fresh index, WordNet opened and every word looked up anew.
  const cold = ToolSearch.build(big);
  const c0 = performance.now();
  cold.search(queries[0]!.query);
  results.firstSearchMs = round(performance.now() - c0, 1);

  // One server of 50 relists: only its tools are re-indexed.
  const fifty = replicate(corpus, { servers: 50 });
  const reg50 = registryOf(fifty);
  const idx50 = ToolSearch.build(reg50 as ToolSource);
  reg50.onChange((change) => idx50.apply(change));
  const updates: number[] = [];
  const target = fifty.find((s) => s.tools.length >= 20)!;
  for (let i = 0; i < 21; i++) {
    // Every description changes: each of its tools is an `updated` entry.
    const relisted = target.tools.map((t) => ({ ...t, description: `${t.description ?? ''} (v${i})` }));
    const t0 = performance.now();
    reg50.commit(target.server, 2 + i, { tools: relisted, prompts: [] });
    updates.push(performance.now() - t0);
  }
  updates.sort((a, b) => a - b);
  results.relist = { servers: fifty.length, tools: reg50.tools().length, relistedTools: target.tools.length, medianMs: round(percentile(updates, 50)), maxMs: round(updates.at(-1)!) };
  console.log(`one server of ${fifty.length} relists (${target.tools.length} tools changed, ${reg50.tools().length} in all): registry commit + index update ${round(percentile(updates, 50))} ms median`);
  writeFileSync(`${BENCH_DIR}tool-budget-results.json`, `${JSON.stringify(results, null, 2)}\n`);
  withWordnet.close();
  bigSearch.close();
  cold.close();
  idx50.close();
}

main();
