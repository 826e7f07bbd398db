/**
 * Tool search: a BM25F index (field-index.ts, its term dictionary
 * MiniSearch's radix tree) over the registered tools, kept in step with the registry one server's change at a time, and a
 * query side that reaches past the words of the query: stems and prefixes,
 * typos, developer shorthand, and WordNet's synonyms, hypernyms and related
 * forms of each query word at a lower weight than the word itself.
 */
import type { RegisteredTool, RegistryChange } from '../registry/registry.js';
import { aliasesOf } from './aliases.js';
import { isStopWord, terms, termOf, words } from './text.js';
import { WordNet } from './wordnet.js';
import { FieldIndex, type TermQuery } from './field-index.js';

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
  name: string;
  title: string;
  /** The description's first sentence: what the tool does, before the caveats and examples. */
  summary: string;
  description: string;
  params: string;
  serverWords: string;
}

/** Field weights: a query word in the tool's name says more than one in a parameter's description. */
const BOOST: Record<keyof Doc, number> = { name: 3, title: 2, summary: 3, description: 0.5, params: 0.3, serverWords: 1.5 };
const FIELDS = Object.keys(BOOST) as (keyof Doc)[];
/** BM25F saturation and length normalisation; how much prefix and typo matches count; what a group's other alternatives add to its best. */
const SCORING = { k: 1.2, b: 0.75, prefixWeight: 0.5, fuzzyWeight: 0.3, restWeight: 0.1 };
/** The weight of each kind of expansion against the query's own words (1). */
const ALIAS_WEIGHT = 0.7;
const RELATED_WEIGHT = 0.35;
/** Expansions of a word some tool already uses count this much less. */
const KNOWN_WORD_SCALE = 0.5;
/** At most this many alternatives of one query word, best first. */
const MAX_ALTERNATIVES = 8;
const DEFAULT_LIMIT = 10;

/** A term standing in for a query word, its weight, and whether it comes from the curated shorthand (not WordNet). */
interface Alternative {
  term: string;
  weight: number;
  curated: boolean;
}

/** What a target named in a query is, and the terms tools taking such a target use (at lower weight than the query's words). */
type TargetKind = 'url' | 'file';
const TARGET_TERMS: Record<TargetKind, [string, number][]> = {
  url: [
    ['url', 0.5],
    ['page', 0.3],
  ],
  file: [
    ['file', 0.5],
    ['path', 0.3],
  ],
};
const URL = /\b(?:[a-z][a-z0-9+.-]*:\/\/\S+|(?:localhost|\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?(?:\/\S*)?|www\.\S+)/gi;
/** `name.ext` (an extension of letters, at most five) or a path of two parts or more, not a version number. */
const FILE = /(?:^|\s)(?:[\w.-]*\/[\w./-]+|[\w-]{2,}(?:\.[\w-]+)*\.[a-z][a-z0-9]{0,4})(?=[\s,;:!?)]|[.](?:\s|$)|$)/gi;

/** The query with URLs and file names taken out, and the kinds of target it named. */
function targetsOf(query: string): { text: string; kinds: TargetKind[] } {
  const kinds = new Set<TargetKind>();
  const text = query
    .replace(URL, () => {
      kinds.add('url');
      return ' ';
    })
    .replace(FILE, () => {
      kinds.add('file');
      return ' ';
    });
  return { text, kinds: [...kinds] };
}
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
  private readonly index = new FieldIndex({ fields: FIELDS, boosts: BOOST, ...SCORING });
  private wordnet: WordNet | undefined | null;
  private readonly expansions = new Map<string, Alternative[]>();

  private constructor(
    private readonly source: ToolSource,
    private readonly options: { wordnet?: boolean } = {},
  ) {}

  /** An index of every tool `source` lists now. `wordnet: false` turns the WordNet expansion off (for comparisons). */
  static build(source: ToolSource, options: { wordnet?: boolean } = {}): ToolSearch {
    const search = new ToolSearch(source, options);
    for (const tool of source.tools()) search.add(tool);
    return search;
  }

  /** How many tools are indexed. */
  get size(): number {
    return this.index.size;
  }

  /** Re-index what one registry change touched: the changed names of one server, nothing else. */
  apply(change: Pick<RegistryChange, 'added' | 'removed' | 'updated'>): void {
    for (const name of change.removed) this.index.remove(name);
    for (const name of [...change.added, ...change.updated]) {
      const tool = this.source.getTool(name);
      if (tool) this.add(tool);
      else this.index.remove(name);
    }
  }

  /** Tools matching `query`, best first. */
  search(query: string, options: SearchToolsOptions = {}): ToolMatch[] {
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (limit <= 0) return [];
    const groups = this.expand(query);
    if (groups.length === 0) return [];
    const servers = options.servers === undefined ? undefined : new Set(options.servers);
    const out: ToolMatch[] = [];
    // The registry is the truth: a tool it no longer lists is never returned.
    const accept = (id: string): boolean => {
      const tool = this.source.getTool(id);
      return tool !== undefined && (servers === undefined || servers.has(tool.server));
    };
    for (const hit of this.index.search(groups, limit, accept)) out.push({ tool: this.source.getTool(hit.id)!, score: hit.score });
    return out;
  }

  /** Release the WordNet files. */
  close(): void {
    this.wordnet?.close();
  }

  /**
   * One group per distinct word of the query: the word's term (with its
   * prefixes, and typo matches when no tool uses it) at weight 1, then its
   * shorthand and WordNet relations at lower weights.
   */
  private expand(query: string): TermQuery[][] {
    const groups = new Map<string, TermQuery[]>();
    // A URL, a file name or a path in a task names the target, not the tool ("go to https://…",
    // "open package.json"): its words are noise, but what kind of thing it is says which tools fit.
    const { text, kinds } = targetsOf(query);
    for (const kind of kinds) groups.set(`<${kind}>`, TARGET_TERMS[kind].map(([term, weight]) => ({ term, weight })));
    for (const w of words(text)) {
      if (isStopWord(w)) continue;
      // Two-letter words count only as known shorthand (`pr`, `ls`); otherwise they are file extensions and noise.
      if (w.length < 3 && aliasesOf(w).length === 0) continue;
      const term = termOf(w);
      if (groups.has(term)) continue;
      const group: TermQuery[] = [{ term, weight: 1, prefix: term.length >= 4, fuzzy: term.length >= 5 ? Math.round(term.length * 0.2) : 0 }];
      // A word the tools already use speaks for itself: its synonyms mostly add noise. A word
      // no tool uses is where the expansion earns its keep.
      const scale = this.index.hasTerm(term) ? KNOWN_WORD_SCALE : 1;
      // Only alternatives some tool uses can match; the strongest few of those.
      let alternatives = 0;
      for (const alt of this.related(w)) {
        if (alt.term === term || !this.index.hasTerm(alt.term)) continue;
        group.push({ term: alt.term, weight: alt.curated ? alt.weight : alt.weight * scale });
        if (++alternatives >= MAX_ALTERNATIVES) break;
      }
      groups.set(term, group);
    }
    return [...groups.values()];
  }

  private add(tool: RegisteredTool): void {
    const doc = docOf(tool);
    this.index.add(
      tool.name,
      FIELDS.map((f) => terms(doc[f])),
    );
  }

  /** A word's alternatives, best first: its shorthand (curated) and its WordNet relations. */
  private related(word: string): Alternative[] {
    let found = this.expansions.get(word);
    if (found) return found;
    const best = new Map<string, Alternative>();
    const add = (text: string, weight: number, curated: boolean): void => {
      for (const term of terms(text)) if ((best.get(term)?.weight ?? 0) < weight) best.set(term, { term, weight, curated });
    };
    for (const a of aliasesOf(word)) add(a, ALIAS_WEIGHT, true);
    for (const r of this.lexicon()?.related(word) ?? []) add(r.word, RELATED_WEIGHT * r.weight, false);
    found = [...best.values()].sort((a, b) => b.weight - a.weight);
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
