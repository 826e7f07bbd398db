/**
 * Turns controller events into what the dashboard's live connections need:
 * a feed of transitions (with a short history for pages opened later), a
 * fresh view after every change — one view per burst of events, computed
 * only while someone is watching — and the tail of each server's log,
 * followed only while someone is watching too.
 */
import type { McpController } from '../controller/controller.js';
import type { LogRecord } from '../controller/server-logs.js';
import { LogTails } from './log-tail.js';
import { dashboardView, type DashboardView } from './view.js';

/** One line of the live feed. */
export interface FeedEntry {
  /** ISO time. */
  at: string;
  /** `snapshot`: a server's state when the dashboard started (its earlier history was not watched). */
  kind: 'snapshot' | 'transition' | 'tools' | 'approval' | 'config-error' | 'action';
  server?: string;
  /** For transitions: the new and the previous public state. */
  state?: string;
  previous?: string;
  text: string;
}

/** What a live connection receives. */
export type HubMessage = { type: 'status'; view: DashboardView } | { type: 'feed'; entry: FeedEntry } | { type: 'log'; server: string; records: LogRecord[] };

/** Fan-out of controller events to the dashboard's SSE clients. */
export class DashboardHub {
  private readonly clients = new Set<(msg: HubMessage) => void>();
  private readonly history: FeedEntry[] = [];
  private readonly unsubscribe: (() => void)[];
  private pending: NodeJS.Immediate | undefined;
  private readonly tails: LogTails;

  constructor(
    private readonly controller: McpController,
    private readonly historySize = 200,
  ) {
    this.tails = new LogTails(controller, (server, records) => this.send({ type: 'log', server, records }));
    const dirty = (): void => this.scheduleStatus();
    this.unsubscribe = [
      controller.on('server-state', (e) => {
        const why = e.reason && e.reason !== e.state ? ` (${e.reason})` : '';
        this.add({ kind: 'transition', server: e.name, state: e.state, ...(e.previous ? { previous: e.previous } : {}), text: `${e.previous ?? 'new'} → ${e.state}${why}` });
        dirty();
      }),
      controller.on('tools-changed', (e) => {
        const parts = [];
        if (e.added.length > 0) parts.push(`+${e.added.length} tool${e.added.length === 1 ? '' : 's'}`);
        if (e.removed.length > 0) parts.push(`−${e.removed.length} tool${e.removed.length === 1 ? '' : 's'}`);
        this.add({ kind: 'tools', server: e.server, text: parts.join(', ') });
        dirty();
      }),
      controller.on('pending-approval', (e) => {
        this.add({ kind: 'approval', text: `waiting for approval: ${e.servers.join(', ')}` });
        dirty();
      }),
      controller.on('config-error', (e) => {
        for (const issue of e.issues) {
          this.add({ kind: 'config-error', ...(issue.server ? { server: issue.server } : {}), text: `${issue.file}${issue.line ? `:${issue.line}` : ''}: ${issue.message}` });
        }
      }),
      controller.on('client-update', dirty),
    ];
    for (const row of controller.status()) {
      this.add({ kind: 'snapshot', server: row.name, state: row.state, text: `${row.state} when the dashboard started` });
    }
  }

  /** Add a feed line (also used for the dashboard's own actions) and send it to every client. */
  add(entry: Omit<FeedEntry, 'at'>): void {
    const full: FeedEntry = { at: new Date().toISOString(), ...entry };
    this.history.push(full);
    if (this.history.length > this.historySize) this.history.splice(0, this.history.length - this.historySize);
    this.send({ type: 'feed', entry: full });
  }

  /** The most recent feed lines, oldest first. */
  recent(): FeedEntry[] {
    return [...this.history];
  }

  /** The log tails known now, by server (the first watcher starts them, so they may still be filling). */
  logTails(): Record<string, LogRecord[]> {
    return this.tails.snapshot();
  }

  /** Receive every message until the returned function is called. */
  subscribe(client: (msg: HubMessage) => void): () => void {
    this.clients.add(client);
    if (this.clients.size === 1) this.followLogs();
    return () => {
      this.clients.delete(client);
      if (this.clients.size === 0) this.tails.close();
    };
  }

  /** Follow the logs of the servers there are now (while someone watches). */
  private followLogs(names?: Iterable<string>): void {
    if (this.clients.size === 0) return;
    try {
      this.tails.sync(names ?? this.controller.status().map((r) => r.name));
    } catch {
      // the controller is being disposed
    }
  }

  /** Stop listening to the controller and drop every client. */
  close(): void {
    for (const off of this.unsubscribe) off();
    this.tails.close();
    if (this.pending) clearImmediate(this.pending);
    this.pending = undefined;
    this.clients.clear();
  }

  private scheduleStatus(): void {
    // One view per burst: a reconcile emits many events in the same tick.
    if (this.pending || this.clients.size === 0) return;
    this.pending = setImmediate(() => {
      this.pending = undefined;
      if (this.clients.size === 0) return;
      let view: DashboardView;
      try {
        view = dashboardView(this.controller);
      } catch {
        return; // the controller is being disposed; the page keeps its last view
      }
      this.followLogs(view.servers.map((s) => s.name));
      this.send({ type: 'status', view });
    });
  }

  private send(msg: HubMessage): void {
    for (const client of [...this.clients]) {
      try {
        client(msg);
      } catch {
        // one broken connection must not stop the others
      }
    }
  }
}
