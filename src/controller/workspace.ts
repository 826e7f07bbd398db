import type { Actor } from 'xstate';
import { serverSystemId, type reconcilerMachine } from '../../machines/reconciler.machine.js';
import type { ServerActorRef } from '../../machines/server.machine.js';
import type { DesiredMap } from '../../machines/types.js';
import type { ListingCache } from '../cache/listing-cache.js';
import type { ConfigReader } from '../config/reader.js';
import type { ConfigIssue } from '../config/sources.js';
import { workspaceRoots, type ClientFeatures } from '../connection/client-capabilities.js';
import type { ProcessTracker } from '../connection/processes.js';
import type { ComputedGating } from '../gating/compute.js';
import type { ConfigWatcher } from '../watch/config-watcher.js';
import type { ToolRegistry } from '../registry/registry.js';
import type { Root } from '@modelcontextprotocol/sdk/types.js';
import type { Decisions } from './decisions.js';
import type { SafeEmitter } from './emitter.js';
import type { Semaphore } from './semaphore.js';
import type { ServerLogWriter } from './server-logs.js';
import type { Logger, McpControllerEvents, McpControllerOptions, ServerStatus } from './types.js';

/** The parts of one workspace that never change over a controller's life. */
export interface WorkspaceParts {
  options: McpControllerOptions;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  emitter: SafeEmitter<McpControllerEvents>;
  registry: ToolRegistry;
  tracker: ProcessTracker;
  /** Bounds concurrent process starts (docs/performance.md). */
  semaphore: Semaphore;
  reader: ConfigReader;
  decisions: Decisions;
  /** The workspace root as given; canonical once started. */
  root: string;
}

/**
 * One workspace as the controller's collaborators share it (the composition
 * root's state): what never changes (options, registry, reader, …) and what
 * does (the root once canonical, the listing cache and logs once started, the
 * desired map as last reconciled, the reconciler actor). Collaborators read
 * it directly instead of through forwarding closures; each field has one
 * writer, named on it.
 */
export class Workspace implements WorkspaceParts {
  readonly options: McpControllerOptions;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  readonly emitter: SafeEmitter<McpControllerEvents>;
  readonly registry: ToolRegistry;
  readonly tracker: ProcessTracker;
  readonly semaphore: Semaphore;
  readonly reader: ConfigReader;
  readonly decisions: Decisions;
  /** The workspace root, canonical once started (written by the controller). */
  root: string;
  /** Listings by fingerprint (SPEC §12); created by `start()` once the root is canonical. */
  cache: ListingCache | undefined;
  /** Each server's stderr, log messages and supervisor lines; created by `start()` (none when logs are off). */
  serverLog: ServerLogWriter | undefined;
  /** `start()` was called (written by the controller). */
  started = false;
  /** `dispose()` was called: a connect that lands now is closed, nothing new is sent (written by the controller). */
  disposing = false;
  /** The desired map as last reconciled (written by `DesiredState`). */
  desired: DesiredMap = {};
  /** The gating computed by the last reconcile (written by `DesiredState`). */
  gating: ComputedGating | undefined;
  /** The config issues of the last read, warnings included (written by `DesiredState`). */
  issues: readonly ConfigIssue[] = [];
  /** The config watcher, while watching (written by the controller). */
  watcher: ConfigWatcher | undefined;
  /** Files watched besides the config: the approvals and token stores (written by the controller). */
  storePaths: string[] = [];
  /** Roots offered to servers; `undefined` for the workspace root (written by `setRoots`). */
  roots: Root[] | undefined;
  private reconciler: Actor<typeof reconcilerMachine> | undefined;
  private statusRows: (() => ServerStatus[]) | undefined;
  /** The `client-update` scheduled for the end of this turn, if any (see {@link clientUpdate}). */
  private pendingUpdate: NodeJS.Immediate | undefined;
  /** Servers whose registered tools or prompts changed since the last `client-update`. */
  private readonly listingsChanged = new Set<string>();

  constructor(parts: WorkspaceParts) {
    this.options = parts.options;
    this.env = parts.env;
    this.logger = parts.logger;
    this.emitter = parts.emitter;
    this.registry = parts.registry;
    this.tracker = parts.tracker;
    this.semaphore = parts.semaphore;
    this.reader = parts.reader;
    this.decisions = parts.decisions;
    this.root = parts.root;
    this.roots = parts.options.roots === false ? undefined : (parts.options.roots ?? undefined);
  }

  /** The reconciler actor; attached once by the controller, right after the server machine is provided. */
  get actor(): Actor<typeof reconcilerMachine> {
    if (!this.reconciler) throw new Error('the reconciler actor is not attached yet');
    return this.reconciler;
  }

  /** Attach the reconciler actor and the status rows `client-update` carries. */
  attach(actor: Actor<typeof reconcilerMachine>, statusRows: () => ServerStatus[]): void {
    this.reconciler = actor;
    this.statusRows = statusRows;
  }

  /** `name`'s live server actor, by its system id. */
  server(name: string): ServerActorRef | undefined {
    return this.reconciler?.system.get(serverSystemId(name)) as ServerActorRef | undefined;
  }

  /** Every live server actor by name (a Map: a name such as `toString` must not find an inherited member). */
  servers(): Map<string, ServerActorRef> {
    const out = new Map<string, ServerActorRef>();
    if (!this.reconciler) return out;
    for (const [name, ref] of Object.entries(this.reconciler.getSnapshot().context.servers)) {
      if (this.reconciler.system.get(serverSystemId(name)) === ref) out.set(name, ref);
    }
    return out;
  }

  /**
   * The reconciler's server actors as it holds them, without the name map and
   * system-id checks of {@link servers}: for scans that run at every
   * transition and skip actors that are not active anyway.
   */
  serverRefs(): readonly ServerActorRef[] {
    return this.reconciler ? Object.values(this.reconciler.getSnapshot().context.servers) : [];
  }

  /** The reconciler runs (started and not stopped), so it can be told. */
  running(): boolean {
    return this.started && this.reconciler?.getSnapshot().status === 'active';
  }

  /** Elicitation, sampling and roots as declared to every server. */
  clientFeatures(): ClientFeatures {
    const { options } = this;
    return {
      ...(options.onElicitation ? { onElicitation: options.onElicitation } : {}),
      ...(options.onElicitationComplete ? { onElicitationComplete: options.onElicitationComplete } : {}),
      ...(options.onSampling ? { onSampling: options.onSampling } : {}),
      ...(options.roots === false ? {} : { roots: () => this.roots ?? workspaceRoots(this.root) }),
    };
  }

  /**
   * Tell `client-update` listeners (dashboard, watch view, gateway) that
   * something they show changed; `server` when its registered tools or
   * prompts did. Coalesced to one event per turn of the event loop
   * (docs/client-update.md): each event builds every status row, and a start
   * of N servers makes several changes per server. Nothing is scheduled while
   * nobody listens.
   */
  clientUpdate(server?: string): void {
    if (!this.statusRows || !this.emitter.has('client-update')) return;
    if (server !== undefined) this.listingsChanged.add(server);
    // setImmediate, not a microtask: it runs once the I/O callbacks of this turn (other servers'
    // replies among them) are done, so they share one event; the events it follows are already out.
    this.pendingUpdate ??= setImmediate(() => this.flushClientUpdate());
  }

  /**
   * Send the pending `client-update` now, with the rows as they are (a no-op
   * when none is pending). The controller calls it last thing in `dispose()`,
   * so listeners hear the final rows and nothing fires afterwards.
   */
  flushClientUpdate(): void {
    if (this.pendingUpdate === undefined) return;
    clearImmediate(this.pendingUpdate);
    this.pendingUpdate = undefined;
    const registryChanged = [...this.listingsChanged];
    this.listingsChanged.clear();
    if (this.statusRows && this.emitter.has('client-update')) this.emitter.emit('client-update', { status: this.statusRows(), registryChanged });
  }
}
