/**
 * Runs before each test file, in its worker. The OAuth token store's default
 * is in the user's config dir: a controller a test builds without its own
 * store gets one of this file's own under the run's temp root (removed by
 * test/global-setup.ts). Not one per run: tokens and client registrations
 * are keyed by server URL, and a loopback port one file's fixture used can
 * be another file's a moment later.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

const root = process.env.MCPR_TEST_USER_DIRS;
if (root) process.env.MCP_RECONCILER_OAUTH_STORE = join(root, 'oauth', `${randomUUID()}.json`);
