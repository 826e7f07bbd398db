import type { ServerConfig } from '../../machines/types.js';
import { gatingEqual, serversEqual, type GatingLists } from '../gating/equality.js';

/** The parts of a parsed config a reload acts on: the server map and the gating settings. */
export interface ConfigContent {
  servers?: Readonly<Record<string, ServerConfig>>;
  /** `mcp.allowed` / `mcp.excluded` (other keys such as a theme may be present and are ignored). */
  settings?: GatingLists;
}

/**
 * Whether `next` asks for nothing different from `prev` (SPEC §2.4, §3.2):
 * servers compared with `serversEqual`, settings with `gatingEqual`. A
 * reformat, an unrelated key or an identical save gives `true`, so the save
 * triggers nothing. No previous content (first read) is never the same.
 */
export function sameContent(prev: ConfigContent | undefined, next: ConfigContent): boolean {
  if (prev === undefined) return false;
  return serversEqual(prev.servers, next.servers) && gatingEqual(prev.settings, next.settings);
}
