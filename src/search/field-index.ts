/**
 * A BM25F inverted index over documents of a few weighted fields, built for
 * searches that must answer in a millisecond over thousands of tools and
 * follow one server's relisting without a rebuild.
 *
 * The term dictionary is MiniSearch's radix tree (`minisearch/SearchableMap`:
 * prefix and Levenshtein lookups); the postings and the scoring are here,
 * because a search is a few dozen weighted terms OR-ed together and
 * MiniSearch's query path allocates a result object per matching document
 * and term (most of its time went to that and to the collector).
 *
 * Scoring (SPEC §16): each field's term frequency is
 * normalised by the field's length (BM25's `b`), weighted by the field's
 * boost and summed (BM25F), then saturated once (`k`) and multiplied by the
 * term's inverse document frequency. A query is a list of *groups*, one per
 * word of the query; a group holds the word's term and its alternatives
 * (prefix and typo matches, shorthand, synonyms), each with a weight. A
 * document scores in a group by its best alternative, so ten synonyms of one
 * word do not outweigh two words that both match; the sum over groups is
 * then scaled by how many groups matched (coordination).
 */
import SearchableMap from 'minisearch/SearchableMap';

/** Postings of one term: the slots of the documents holding it and their per-field frequencies. */
interface Posting {
  slots: number[];
  /** `tfs[i * fields + f]`: how often the term occurs in field `f` of document `slots[i]`. */
  tfs: number[];
}

/** One alternative of a query word: a term and its weight (1 for the word itself). */
export interface TermQuery {
  term: string;
  weight: number;
  /** Also match indexed terms this term is a prefix of, at `prefixWeight`. */
  prefix?: boolean;
  /** Also match indexed terms at most this many edits away, at `fuzzyWeight`, when the term itself is not indexed. */
  fuzzy?: number;
}

/** The scoring parameters of a {@link FieldIndex}. */
export interface FieldIndexOptions {
  /** Field names, in the order documents give them. */
  fields: readonly string[];
  /** Weight of each field, by name (1 when absent). */
  boosts: Readonly<Record<string, number>>;
  /** BM25 saturation. */
  k: number;
  /** BM25 length normalisation, 0 (none) to 1 (full). */
  b: number;
  /** Weight of a prefix match against the word itself (scaled down further by the extra letters). */
  prefixWeight: number;
  /** Weight of a typo match against the word itself (scaled down further by the distance). */
  fuzzyWeight: number;
  /**
   * How much the alternatives of a group beyond its best add (0: only the
   * best counts; 1: they add up).
   */
  restWeight: number;
}

/** One hit: the document id and its score. */
export interface IndexHit {
  id: string;
  score: number;
}

/** A BM25F index: {@link add} and {@link remove} documents by id, {@link search} with grouped terms. */
export class FieldIndex {
  private readonly dict = new SearchableMap<Posting>();
  private readonly slotOf = new Map<string, number>();
  private readonly ids: (string | undefined)[] = [];
  /** Distinct terms of each slot's document, to take it out of the postings again. */
  private readonly docTerms: (string[] | undefined)[] = [];
  /** `lengths[slot * fields + f]`: how many terms field `f` of the slot's document has. */
  private readonly lengths: number[] = [];
  private readonly totalLength: number[];
  private readonly boost: number[];
  private readonly free: number[] = [];
  private readonly width: number;
  // Scratch arrays of the search, one slot each, reused across searches.
  private total = new Float64Array(0);
  private best = new Float64Array(0);
  private rest = new Float64Array(0);
  private matched = new Uint16Array(0);
  /** Slots with a score in this search / in the current group (each at most once, so `size` entries suffice). */
  private touched = new Int32Array(0);
  private inGroup = new Int32Array(0);
  private inGroupCount = 0;

  constructor(private readonly options: FieldIndexOptions) {
    this.width = options.fields.length;
    this.totalLength = new Array<number>(this.width).fill(0);
    this.boost = options.fields.map((f) => options.boosts[f] ?? 1);
  }

  /** How many documents are indexed. */
  get size(): number {
    return this.slotOf.size;
  }

  /** Whether a document of this id is indexed. */
  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Whether some indexed document holds `term`. */
  hasTerm(term: string): boolean {
    return this.dict.has(term);
  }

  /** Index a document: its terms per field, in the order of `options.fields`. Replaces a document of the same id. */
  add(id: string, fields: readonly (readonly string[])[]): void {
    this.remove(id);
    const slot = this.free.pop() ?? this.ids.length;
    this.ids[slot] = id;
    this.slotOf.set(id, slot);
    const counts = new Map<string, number[]>();
    for (let f = 0; f < this.width; f++) {
      const terms = fields[f] ?? [];
      this.lengths[slot * this.width + f] = terms.length;
      this.totalLength[f]! += terms.length;
      for (const term of terms) {
        let tf = counts.get(term);
        if (!tf) counts.set(term, (tf = new Array<number>(this.width).fill(0)));
        tf[f]!++;
      }
    }
    for (const [term, tf] of counts) {
      const posting = this.dict.fetch(term, () => ({ slots: [], tfs: [] }));
      posting.slots.push(slot);
      for (const n of tf) posting.tfs.push(n);
    }
    this.docTerms[slot] = [...counts.keys()];
  }

  /** Take a document out of the index; `false` when it was not there. */
  remove(id: string): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    const w = this.width;
    for (const term of this.docTerms[slot] ?? []) {
      const posting = this.dict.get(term);
      if (!posting) continue;
      const i = posting.slots.lastIndexOf(slot);
      if (i < 0) continue;
      // Order within a posting does not matter: the last entry takes the removed one's place.
      const last = posting.slots.length - 1;
      posting.slots[i] = posting.slots[last]!;
      for (let f = 0; f < w; f++) posting.tfs[i * w + f] = posting.tfs[last * w + f]!;
      posting.slots.pop();
      posting.tfs.length -= w;
      if (posting.slots.length === 0) this.dict.delete(term);
    }
    for (let f = 0; f < w; f++) this.totalLength[f]! -= this.lengths[slot * w + f]!;
    this.docTerms[slot] = undefined;
    this.ids[slot] = undefined;
    this.slotOf.delete(id);
    this.free.push(slot);
    return true;
  }

  /**
   * The best `limit` documents for `groups` (see the module comment), best
   * first; `accept` leaves documents out by id.
   */
  search(groups: readonly (readonly TermQuery[])[], limit: number, accept?: (id: string) => boolean): IndexHit[] {
    const n = this.ids.length;
    if (this.total.length < n) this.grow(n);
    const { total, best, rest, matched, touched, inGroup } = this;
    let touchedCount = 0;
    for (const group of groups) {
      this.inGroupCount = 0;
      for (const q of group) {
        for (const [posting, weight] of this.expansions(q)) this.score(posting, weight);
      }
      for (let i = 0; i < this.inGroupCount; i++) {
        const slot = inGroup[i]!;
        if (matched[slot] === 0) touched[touchedCount++] = slot;
        matched[slot]!++;
        total[slot]! += best[slot]! + this.options.restWeight * rest[slot]!;
        best[slot] = 0;
        rest[slot] = 0;
      }
    }
    // Top `limit` by insertion into a short sorted list.
    const top: IndexHit[] = [];
    for (let i = 0; i < touchedCount; i++) {
      const slot = touched[i]!;
      const score = total[slot]! * matched[slot]!;
      total[slot] = 0;
      matched[slot] = 0;
      if (top.length >= limit && score <= top[top.length - 1]!.score) continue;
      const id = this.ids[slot]!;
      if (accept && !accept(id)) continue;
      let at = top.length;
      while (at > 0 && top[at - 1]!.score < score) at--;
      top.splice(at, 0, { id, score });
      if (top.length > limit) top.pop();
    }
    return top;
  }

  /** The postings a term query reaches and the weight of each: the term, and its prefix or typo matches. */
  private expansions(q: TermQuery): [Posting, number][] {
    const out: [Posting, number][] = [];
    const exact = this.dict.get(q.term);
    if (exact) out.push([exact, q.weight]);
    if (q.prefix) {
      for (const [term, posting] of this.dict.atPrefix(q.term)) {
        const extra = term.length - q.term.length;
        if (extra > 0) out.push([posting, (q.weight * this.options.prefixWeight * term.length) / (term.length + 0.3 * extra)]);
      }
    }
    // A word the tools use is not a typo: typo matches only for unknown words.
    if (q.fuzzy && !exact) {
      for (const [term, [posting, distance]] of this.dict.fuzzyGet(q.term, q.fuzzy)) {
        if (distance > 0 && !term.startsWith(q.term)) out.push([posting, (q.weight * this.options.fuzzyWeight * term.length) / (term.length + distance)]);
      }
    }
    return out;
  }

  /** Add one term's BM25F score at `weight` to the group scores of the documents holding it. */
  private score(posting: Posting, weight: number): void {
    const { k, b } = this.options;
    const w = this.width;
    const docs = this.slotOf.size;
    const df = posting.slots.length;
    const idf = Math.log(1 + (docs - df + 0.5) / (df + 0.5));
    const norm: number[] = [];
    for (let f = 0; f < w; f++) {
      const avg = this.totalLength[f]! / Math.max(1, docs);
      norm.push(avg > 0 ? b / avg : 0);
    }
    const { best, rest, lengths, boost } = this;
    const { slots, tfs } = posting;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      let tf = 0;
      for (let f = 0; f < w; f++) {
        const raw = tfs[i * w + f]!;
        if (raw !== 0) tf += (boost[f]! * raw) / (1 - b + norm[f]! * lengths[slot * w + f]!);
      }
      const s = weight * idf * ((tf * (k + 1)) / (tf + k));
      const had = best[slot]!;
      if (had === 0 && rest[slot] === 0) this.inGroup[this.inGroupCount++] = slot;
      if (s > had) {
        rest[slot]! += had;
        best[slot] = s;
      } else {
        rest[slot]! += s;
      }
    }
  }

  private grow(n: number): void {
    const size = Math.max(n, this.total.length * 2, 64);
    this.total = new Float64Array(size);
    this.best = new Float64Array(size);
    this.rest = new Float64Array(size);
    this.matched = new Uint16Array(size);
    this.touched = new Int32Array(size);
    this.inGroup = new Int32Array(size);
  }
}
