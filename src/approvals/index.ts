/** Approvals: config hashes, the decision store and who to ask (SPEC §4). */
export { approvalHash } from './hash.js';
export {
  FileApprovalStore,
  MemoryApprovalStore,
  canonicalRoot,
  defaultApprovalsPath,
  type ApprovalRecord,
  type ApprovalStore,
} from './store.js';
export { acquireFileLock, withFileLock, type FileLockOptions } from './lock.js';
export { approvalStates, promptableServers } from './promptable.js';
