import type { McpControllerOptions } from '../controller/types.js';
import type { ToolExposure } from '../search/exposure.js';
import { GATEWAY_IDLE_TIMEOUT_MS, type GatewayPool } from './pool.js';

/**
 * The controller options every gateway shares (`serve`, the daemon's
 * workspaces): servers start on demand for the pool's sessions, stop after
 * the idle timeout, and managed servers' elicitation and sampling go to a
 * connected client that supports them (the pool picks it).
 */
export function gatewayControllerOptions(
  args: { lazy?: boolean; exposure?: ToolExposure | undefined; idleTimeoutMs?: number | undefined },
  pool: () => GatewayPool | undefined,
  what: string,
): Pick<McpControllerOptions, 'onDemand' | 'startup' | 'toolExposure' | 'idleTimeoutMs' | 'onElicitation' | 'onElicitationComplete' | 'onSampling'> {
  return {
    onDemand: true,
    ...(args.lazy ? { startup: 'lazy' as const } : {}),
    ...(args.exposure ? { toolExposure: args.exposure } : {}),
    idleTimeoutMs: args.idleTimeoutMs ?? GATEWAY_IDLE_TIMEOUT_MS,
    onElicitation: (server, request, opts) => pool()?.elicit(server, request, opts) ?? { action: 'decline' },
    onElicitationComplete: (server, elicitationId) => pool()?.elicitationComplete(server, elicitationId),
    onSampling: (server, request, opts) => {
      const p = pool();
      if (!p) throw new Error(`${what} is not ready`);
      return p.sample(server, request, opts);
    },
  };
}

