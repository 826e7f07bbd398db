import { RESERVED_SERVER_NAME } from '../../machines/reconciler.machine.js';
import type { DesiredServer } from '../../machines/types.js';
import { ErrorCode } from '../errors.js';
import { compareCodePoints, toolPrefix } from '../registry/naming.js';
import type { ConfigIssue } from './sources.js';

/**
 * Issues for server names that collide with something: one per server whose name sanitises to the same tool prefix as a
 * server that sorts before it (`x.y` and `x_y` both become `mcp__x_y__`).
 * The registry lets the first name in code-point order own the prefix and
 * refuses the others' tools whatever the connect order; these issues say so
 * up front, naming both servers. Disabled entries never register tools and
 * are left out. Pure; the issue goes on the file of the server that loses.
 * Also one for a server named `__proto__`, which the config lists but the
 * controller cannot run (its actors live in an object keyed by name).
 */
export function nameCollisionIssues(desired: Readonly<Record<string, DesiredServer>>): ConfigIssue[] {
  const byPrefix = new Map<string, string[]>();
  for (const [name, entry] of Object.entries(desired)) {
    if (entry.config.disabled === true) continue;
    const prefix = toolPrefix(name);
    byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), name]);
  }
  const issues: ConfigIssue[] = [];
  if (Object.hasOwn(desired, RESERVED_SERVER_NAME) && desired[RESERVED_SERVER_NAME]!.config.disabled !== true) {
    issues.push({
      file: desired[RESERVED_SERVER_NAME]!.source,
      server: RESERVED_SERVER_NAME,
      message: `"${RESERVED_SERVER_NAME}" cannot be used as a server name (it is reserved in JavaScript objects), so this server is not started: rename it`,
      code: ErrorCode.ConfigInvalid,
    });
  }
  for (const [prefix, names] of byPrefix) {
    if (names.length < 2) continue;
    const [owner, ...losers] = [...names].sort(compareCodePoints);
    for (const name of losers) {
      issues.push({
        file: desired[name]!.source,
        server: name,
        message:
          `server "${name}" and server "${owner}" both get the tool prefix ${prefix}; "${owner}" sorts first and owns it, ` +
          `so "${name}"'s tools are not registered while "${owner}" is connected: rename one of the two servers`,
        code: ErrorCode.ConfigInvalid,
      });
    }
  }
  return issues;
}
