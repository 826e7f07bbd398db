/**
 * Child process for the cross-process store test: writes `count` distinct
 * decisions to one approvals file, all at once.
 * Usage: node dist/test/approvals/store-writer.js FILE ROOT WORKER COUNT
 */
import { FileApprovalStore } from '../../src/approvals/store.js';

const [file, root, worker, count] = process.argv.slice(2);
if (!file || !root || !worker || !count) {
  process.stderr.write('usage: store-writer FILE ROOT WORKER COUNT\n');
  process.exit(2);
}
const store = new FileApprovalStore(file);
await Promise.all(
  Array.from({ length: Number(count) }, (_, i) =>
    store.set(root, `w${worker}-s${i}`, { hash: `h-${worker}-${i}`, decision: i % 2 === 0 ? 'approved' : 'rejected', at: new Date().toISOString() }),
  ),
);
