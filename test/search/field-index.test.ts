/**
 * The BM25F index under tool search: grouped query words (a word's
 * synonyms do not outweigh a second matching word), prefix and typo
 * alternatives, and removal that leaves no trace of a document.
 */
import { describe, expect, it } from 'vitest';
import { FieldIndex } from '../../src/search/field-index.js';

function index(): FieldIndex {
  return new FieldIndex({ fields: ['name', 'description'], boosts: { name: 3, description: 1 }, k: 1.2, b: 0.75, prefixWeight: 0.5, fuzzyWeight: 0.3, restWeight: 0.1 });
}

describe('FieldIndex', () => {
  it('ranks a document matching two query words above one matching many alternatives of one word', () => {
    const ix = index();
    ix.add('synonyms', [['remov'], ['delet', 'eras', 'drop', 'remov', 'purg']]);
    ix.add('both', [['delet', 'file'], ['remov', 'a', 'file']]);
    ix.add('other', [['list'], ['show', 'entri']]);
    const hits = ix.search(
      [
        [{ term: 'delet', weight: 1 }, { term: 'remov', weight: 0.5 }, { term: 'eras', weight: 0.5 }, { term: 'drop', weight: 0.5 }, { term: 'purg', weight: 0.5 }],
        [{ term: 'file', weight: 1 }],
      ],
      10,
    );
    expect(hits.map((h) => h.id)).toEqual(['both', 'synonyms']);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });

  it('matches prefixes, and typos only of words no document uses', () => {
    const ix = index();
    ix.add('a', [['configur'], []]);
    ix.add('b', [['search'], []]);
    expect(ix.search([[{ term: 'config', weight: 1, prefix: true }]], 5).map((h) => h.id)).toEqual(['a']);
    expect(ix.search([[{ term: 'config', weight: 1 }]], 5)).toEqual([]);
    expect(ix.search([[{ term: 'serch', weight: 1, fuzzy: 1 }]], 5).map((h) => h.id)).toEqual(['b']);
  });

  it('honours limit and accept, and forgets a removed or replaced document', () => {
    const ix = index();
    for (let i = 0; i < 20; i++) ix.add(`t${i}`, [['read'], i % 2 ? ['file'] : ['page']]);
    expect(ix.search([[{ term: 'read', weight: 1 }]], 3)).toHaveLength(3);
    expect(ix.search([[{ term: 'read', weight: 1 }]], 30, (id) => id === 't7').map((h) => h.id)).toEqual(['t7']);
    for (let i = 0; i < 20; i += 2) ix.remove(`t${i}`);
    expect(ix.size).toBe(10);
    expect(ix.hasTerm('page')).toBe(false);
    expect(ix.search([[{ term: 'page', weight: 1 }]], 30)).toEqual([]);
    ix.add('t1', [['write'], []]);
    expect(ix.search([[{ term: 'read', weight: 1 }]], 30).map((h) => h.id)).not.toContain('t1');
    expect(ix.search([[{ term: 'write', weight: 1 }]], 30).map((h) => h.id)).toEqual(['t1']);
    // Freed slots are reused without mixing documents.
    ix.add('new', [['page'], []]);
    expect(ix.search([[{ term: 'page', weight: 1 }]], 30).map((h) => h.id)).toEqual(['new']);
  });
});
