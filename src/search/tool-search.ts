/**
 * Tool search: a BM25+ full-text index (MiniSearch) over the registered
 * tools, kept in step with the registry one server's change at a time, and a
 * query side that reaches past the words of the query: stems and prefixes,
 * typos, developer shorthand, and WordNet's synonyms, hypernyms and related
 * forms of each query word at a lower weight than the word itself.
 */
import MiniSearch from 'minisearch';
import type { RegisteredTool, RegistryChange } from '../registry/registry.js';
import { aliasesOf } from './aliases.js';
import { isStopWord, terms, termOf, words } from './text.js';
import { WordNet } from './wordnet.js';

/** One search hit: the tool as `tools()` lists it, and its score (higher is better). */
export interface ToolMatch {
  tool: RegisteredTool;
  score: number;
}

/** Options of {@link ToolSearch.search}. */
export interface SearchToolsOptions {
  /** At most this many matches (default 10). */
  limit?: number;
  /** Only tools of these servers. */
  servers?: Iterable<string>;
}

/** Where the index reads tools from: the registry, or anything that lists them the same way. */
export interface ToolSource {
  tools(): RegisteredTool[];
  getTool(name: string): RegisteredTool | undefined;
}

interface Doc {
  id: string;
  server: string;
  name: string;
  title: string;
  /** The description's first sentence: what the tool does, before the caveats and examples. */
  summary: string;
  description: string;
  params: string;
  serverWords: string;
}

/** Field weights: a query word in the tool's name says more than one in a parameter's description. */
const BOOST = { name: 3, title: 2, summary: 3, description: 0.5, params: 0.3, serverWords: 1.5 };
const BM25 = { k: 1.2, b: 0.75, d: 0.5 };
/** The weight of each kind of expansion against the query's own words (1). */
const ALIAS_WEIGHT = 0.7;
const RELATED_WEIGHT = 0.35;
/** Expansions of a word some tool already uses count this much less. */
const KNOWN_WORD_SCALE = 0.3;
const DEFAULT_LIMIT = 10;
const MAX_DESCRIPTION = 1_200;
const MAX_PARAMS = 1_200;

/** Parameter names and descriptions of an input schema, one level of nesting deep. */
function paramText(schema: unknown, depth = 0): string {
  const props = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (!props || typeof props !== 'object') return '';
  const out: string[] = [];
  for (const [name, def] of Object.entries(props)) {
    out.push(name);
    const d = def as { description?: unknown; items?: unknown; enum?: unknown };
    if (typeof d?.description === 'string') out.push(d.description);
    if (Array.isArray(d?.enum)) out.push(d.enum.filter((v) => typeof v === 'string').join(' '));
    if (depth < 1) {
      out.push(paramText(def, depth + 1));
      out.push(paramText(d?.items, depth + 1));
    }
  }
  return out.join(' ');
}

/** A description split after its first sentence (up to a full stop followed by a space or line end, at most 300 characters). */
function splitDescription(text: string): [string, string] {
  const m = /^[\s\S]{10,300}?[.!?](\s|$)/.exec(text);
  const head = m ? m[0] : text.slice(0, 300);
  return [head.trim(), text.slice(head.length).trim()];
}

function docOf(tool: RegisteredTool): Doc {
  const nameWords = words(tool.rawName).join(' ');
  // Each part once: a word of the first sentence must not count twice.
  const [summary, rest] = splitDescription(tool.description ?? '');
  return {
    id: tool.name,
    server: tool.server,
    name: nameWords,
    title: tool.title ?? '',
    summary,
    // Past the first paragraphs long descriptions are usage notes and examples: they cost index time and blur the match.
    description: rest.slice(0, MAX_DESCRIPTION),
    params: paramText(tool.inputSchema).slice(0, MAX_PARAMS),
    serverWords: words(tool.server).join(' '),
  };
}

/**
 * The index of one registry. Build it with {@link ToolSearch.build}; feed
 * it every {@link RegistryChange} with {@link apply} (only the changed
 * server's tools are re-indexed). It holds exactly the tools the source
 * lists: tools of servers that are pending approval, rejected, excluded or
 * disabled are never in the registry, so never found.
 */
export class ToolSearch {
  private readonly index: MiniSearch<Doc>;
  private wordnet: WordNet | undefined | null;
  private readonly expansions = new Map<string, Map<string, number>>();
  /** Every term ever indexed (never shrinks: a term whose tools left only keeps its expansions lighter). */
  private readonly vocabulary = new Set<string>();

  private constructor(
    private readonly source: ToolSource,
    private readonly options: { wordnet?: boolean } = {},
  ) {
    this.index = new MiniSearch<Doc>({
      fields: ['name', 'title', 'summary', 'description', 'params', 'serverWords'],
      storeFields: ['server'],
      tokenize: (text) => [text],
      processTerm: (text) => {
        const out = terms(text);
        for (const t of out) this.vocabulary.add(t);
        return out;
      },
      searchOptions: { boost: BOOST, bm25: BM25 },
    });
  }

  /** An index of every tool `source` lists now. `wordnet: false` turns the WordNet expansion off (for comparisons). */
  static build(source: ToolSource, options: { wordnet?: boolean } = {}): ToolSearch {
    const search = new ToolSearch(source, options);
    search.index.addAll(source.tools().map(docOf));
    return search;
  }

  /** How many tools are indexed. */
  get size(): number {
    return this.index.documentCount;
  }

  /** Re-index what one registry change touched: the changed names of one server, nothing else. */
  apply(change: Pick<RegistryChange, 'added' | 'removed' | 'updated'>): void {
    for (const name of change.removed) if (this.index.has(name)) this.index.discard(name);
    for (const name of [...change.added, ...change.updated]) {
      const tool = this.source.getTool(name);
      if (this.index.has(name)) this.index.discard(name);
      if (tool) this.index.add(docOf(tool));
    }
  }

  /** Tools matching `query`, best first. */
  search(query: string, options: SearchToolsOptions = {}): ToolMatch[] {
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (limit <= 0) return [];
    const weights = this.expand(query);
    if (weights.size === 0) return [];
    const queryTerms = [...weights.keys()];
    const original = new Set(queryTerms.filter((t) => weights.get(t) === 1));
    const servers = options.servers === undefined ? undefined : new Set(options.servers);
    const hits = this.index.search(queryTerms.join(' '), {
      tokenize: () => queryTerms,
      processTerm: (t) => t,
      boostTerm: (t) => weights.get(t) ?? 1,
      // Prefixes and typos only for the query's own words: a synonym's prefix is too far away.
      prefix: (t) => original.has(t) && t.length >= 4,
      fuzzy: (t) => (original.has(t) && t.length >= 5 ? 0.2 : false),
      weights: { fuzzy: 0.3, prefix: 0.5 },
      bm25: BM25,
      ...(servers ? { filter: (r) => servers.has(r.server as string) } : {}),
    });
    const out: ToolMatch[] = [];
    for (const hit of hits) {
      // The registry is the truth: a tool it no longer lists is never returned.
      const tool = this.source.getTool(hit.id as string);
      if (!tool) continue;
      out.push({ tool, score: hit.score });
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Release the WordNet files. */
  close(): void {
    this.wordnet?.close();
  }

  /** Query terms with their weights: the words themselves 1, shorthand and WordNet relations less. */
  private expand(query: string): Map<string, number> {
    const out = new Map<string, number>();
    const put = (term: string, weight: number): void => {
      if ((out.get(term) ?? 0) < weight) out.set(term, weight);
    };
    // A URL in a task names the target, not the tool ("go to https://…").
    for (const w of words(query.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, ' '))) {
      if (isStopWord(w)) continue;
      const aliases = this.related(w);
      // Two-letter words count only as known shorthand (`pr`, `ls`); otherwise they are file extensions and noise.
      if (w.length < 3 && aliasesOf(w).length === 0) continue;
      put(termOf(w), 1);
      // A word the tools already use speaks for itself: its synonyms mostly add noise. A word
      // no tool uses is where the expansion earns its keep.
      const known = this.vocabulary.has(termOf(w));
      const scale = known ? KNOWN_WORD_SCALE : 1;
      for (const [term, weight] of aliases) put(term, weight * scale);
    }
    return out;
  }

  private related(word: string): Map<string, number> {
    let found = this.expansions.get(word);
    if (found) return found;
    found = new Map();
    const add = (text: string, weight: number): void => {
      for (const t of terms(text)) if ((found!.get(t) ?? 0) < weight) found!.set(t, weight);
    };
    for (const a of aliasesOf(word)) add(a, ALIAS_WEIGHT);
    for (const r of this.lexicon()?.related(word) ?? []) add(r.word, RELATED_WEIGHT * r.weight);
    this.expansions.set(word, found);
    return found;
  }

  private lexicon(): WordNet | undefined {
    if (this.options.wordnet === false) return undefined;
    if (this.wordnet === undefined) {
      try {
        this.wordnet = WordNet.open();
      } catch {
        // Without the database the search still works, on the query's own words.
        this.wordnet = null;
      }
    }
    return this.wordnet ?? undefined;
  }
}
