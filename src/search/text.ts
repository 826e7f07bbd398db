/**
 * How tool definitions and queries become search terms: words split at
 * `_`, `-`, `.`, `/` and camelCase, lower-cased, stop words dropped, Porter
 * stems. Indexing and querying share it, so a query's "listing" meets a
 * tool's `list_files`.
 */
import { stemmer } from 'stemmer';
import { boundedMemo } from '../util/bounded-memo.js';

/**
 * English function words and the filler of requests to an agent ("I need
 * to", "please", "can you"): they say nothing about which tool.
 */
const STOP_WORDS = new Set(
  (
    'a an and are as at be been being but by can could did do does doing done for from had has have having he her here hers him his how i if in into ' +
    'is it its itself just let me might mine more most must my myself no nor not now of off on once only or other our ours out over own please same ' +
    'shall she should so some such than that the their theirs them then there these they this those through to too under until up upon us very was ' +
    'we were what when where which while who whom why will with would you your yours yourself ' +
    'want wants need needs needed like also using via able get got gets thing things something anything every each any all ' +
    "use used uses tool tools help helps make sure i'd i'm it's what's let's don't doesn't"
  ).split(' '),
);

/** Split an identifier or a sentence into lower-case words (camelCase, snake_case, kebab-case, paths). */
export function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9']+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter((w) => w.length > 0);
}

/** Whether `word` carries no meaning for search. */
export function isStopWord(word: string): boolean {
  return STOP_WORDS.has(word);
}

/** Stems by word: descriptions repeat their words, and stemming is most of the indexing time. */
const stemOf = boundedMemo(100_000, (word: string) => stemmer(word));

/** The term a word is indexed and searched under (its Porter stem). */
export function termOf(word: string): string {
  return word.length <= 3 ? word : stemOf(word);
}

/** Index terms of a text: its words less stop words, stemmed (repeats kept, they count). */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const w of words(text)) if (!isStopWord(w) && w.length > 1) out.push(termOf(w.replace(/'s$/, '')));
  return out;
}
