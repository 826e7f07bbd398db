/**
 * The one pagination loop for the four listings a server answers: tools,
 * prompts, resources and resource templates. Bounded, so a server whose
 * cursors never end cannot keep a connect (or a re-list) going forever.
 */
import type { Client, RequestOptions } from '@modelcontextprotocol/client';
import type { Prompt, Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import { LenientListToolsResultSchema } from './tool-definitions.js';

/** Most pages read of one listing; what a server still has after that is not listed. */
export const MAX_PAGES = 1_000;

const LISTINGS = {
  // Each tool is checked on its own (checkToolDefinitions): one bad definition must not refuse the page.
  tools: { method: 'tools/list', schema: LenientListToolsResultSchema },
  // The others are checked by the SDK against the spec's result type of the method.
  prompts: { method: 'prompts/list', schema: undefined },
  resources: { method: 'resources/list', schema: undefined },
  resourceTemplates: { method: 'resources/templates/list', schema: undefined },
} as const;

/** A listing a server answers; also the key of its items in each page. */
export type ListingKind = keyof typeof LISTINGS;

/** The items of one listing kind. */
export interface ListingItems {
  /** Unchecked: pass them to `checkToolDefinitions`. */
  tools: unknown;
  prompts: Prompt;
  resources: Resource;
  resourceTemplates: ResourceTemplate;
}

/**
 * Every item of listing `kind`, following `nextCursor` for at most
 * {@link MAX_PAGES} pages (a cursor that repeats ends the loop too).
 */
export async function listAll<K extends ListingKind>(client: Client, kind: K, options: RequestOptions): Promise<ListingItems[K][]> {
  const { method, schema } = LISTINGS[kind];
  const items: ListingItems[K][] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const request = { method, params: cursor ? { cursor } : {} };
    const answer = schema ? await client.request(request, schema, options) : await client.request(request as { method: 'prompts/list' }, options);
    const result = answer as unknown as { nextCursor?: string } & Record<K, ListingItems[K][]>;
    items.push(...result[kind]);
    if (!result.nextCursor || result.nextCursor === cursor) break;
    cursor = result.nextCursor;
  }
  return items;
}
