/** What the dashboard page shows, computed from the controller on demand. */
import type { AnyActorRef, StateValue } from 'xstate';
import type { McpController } from '../controller/controller.js';
import { describeReason, fixFor } from '../controller/messages.js';
import type { ServerStatus } from '../controller/types.js';
import { displayPath } from '../format/paths.js';
import { activeStateIds } from '../viz/active.js';
import { getOwn } from '../util/own.js';

/** The server machine's id, the prefix of every chart node id. */
const MACHINE_ID = 'server';

/** One server as the page draws it: its status plus what to highlight and say. */
export interface DashboardServer extends ServerStatus {
  /** Active chart node ids, outermost first (`server.live`, `server.live.connected`). */
  active: string[];
  /** Waiting for an approve / reject decision (SPEC §4 "promptable"). */
  promptable: boolean;
  description?: string;
  /** `source` as a user reads it: relative to the root when inside it, `~/…` under home. */
  sourceLabel?: string;
  /** `is waiting for your approval`, … when unavailable. */
  reasonText?: string;
  /** What fixes it, when unavailable. */
  fix?: string;
  /** Whether the server is switched on (not `disabled`): the card's switch (docs/manage.md `enable` / `disable`). */
  enabled: boolean;
  /** Whether the card's switch can change it: not a removed server, nor one a profile leaves out. */
  switchable: boolean;
  /** Who switched it off, as a user reads it: a file (relative to the root, as `sourceLabel`), the state file, this session, the profile. */
  disabledByLabel?: string;
}

/** The whole page's data. */
export interface DashboardView {
  /** The workspace root. */
  root: string;
  servers: DashboardServer[];
  /** When this view was computed (ISO time). */
  at: string;
}

/** The state value of a server's actor, when it has one (removed servers have none). */
function stateValueOf(controller: McpController, name: string): StateValue | undefined {
  const children = controller.actor.getSnapshot().children as Record<string, AnyActorRef | undefined>;
  const snapshot = getOwn(children, name)?.getSnapshot() as { machine?: { id?: string }; value?: StateValue } | undefined;
  return snapshot?.machine?.id === MACHINE_ID ? snapshot.value : undefined;
}

/**
 * The current view. The highlighted nodes come from the actor's own state
 * value (so `reconnecting` shows whether it is waiting or attempting), the
 * rest from `controller.status()`.
 */
export function dashboardView(controller: McpController): DashboardView {
  const { desired, root } = controller.config();
  const servers = controller.status().map((row): DashboardServer => {
    const value = stateValueOf(controller, row.name);
    const out: DashboardServer = {
      ...row,
      active: value === undefined ? [`${MACHINE_ID}.${row.state}`] : activeStateIds(MACHINE_ID, value),
      promptable: row.state === 'pending_approval',
      enabled: row.state !== 'disabled',
      // A profile only narrows: switching on a server it leaves out would change nothing.
      switchable: row.state !== 'removed' && !(row.state === 'disabled' && row.profile !== undefined && row.disabledBy?.startsWith('profile ') === true),
    };
    if (row.disabledBy) out.disabledByLabel = displayPath(row.disabledBy, root);
    if (row.source) out.sourceLabel = displayPath(row.source, root);
    const description = getOwn(desired, row.name)?.config.description;
    if (description) out.description = description;
    if (row.reason) {
      out.reasonText = describeReason(row.reason, row);
      out.fix = fixFor(row.reason, row.name, undefined, row);
    }
    return out;
  });
  return { root, servers, at: new Date().toISOString() };
}
