/**
 * A small typed event emitter whose listeners can never break the emitter:
 * a throwing listener is reported to `onListenerError` and the others still run.
 */
export class SafeEmitter<Events extends object> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  constructor(private readonly onListenerError: (event: string, err: unknown) => void = () => {}) {}

  /** Subscribe; returns the unsubscribe function. */
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return () => {
      set.delete(listener as (payload: never) => void);
    };
  }

  /** Deliver `payload` to every listener of `event`, isolating their failures. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as (p: Events[K]) => void)(payload);
      } catch (err) {
        try {
          this.onListenerError(String(event), err);
        } catch {
          // a failing error reporter must not break the controller either
        }
      }
    }
  }

  /** Whether anyone listens to `event`. */
  has(event: keyof Events): boolean {
    return (this.listeners.get(event)?.size ?? 0) > 0;
  }

  /** Drop every listener. */
  clear(): void {
    this.listeners.clear();
  }
}
