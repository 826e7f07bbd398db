/**
 * The clustered gateway (`serve --http --cluster`, docs/cluster.md): replicas
 * sharing approvals, listings, credentials, sessions and leases in Redis.
 */
export { Cluster, openCluster, type ClusterOptions } from './cluster.js';
export { RedisApprovalStore, type RedisApprovalStoreOptions } from './approvals.js';
export { connectRedis, redisOptions, workspaceKeys, checkWorkspaceId, type Redis, type WorkspaceKeys } from './redis.js';
export { PrincipalAuth, serversOfScopes, ALL_SERVERS_SCOPE, SERVER_SCOPE_PREFIX, type PrincipalAuthOptions } from './principals.js';
export { RedisTokenStore, principalKey, seal, unseal, sealingKey, type RedisTokenStoreOptions } from './credentials.js';
export { ReplicaAnnouncer, liveReplicas, replicaAddress, newReplicaId, HEARTBEAT_MS, type ReplicaInfo } from './replicas.js';
export { announcementKey, announcementText, readAnnouncement, type AnnouncementTrust } from './announcements.js';
export { SessionRouter, sessionKey, FORWARDED_HEADER, type SessionRouterOptions, type ForwardOutcome } from './sessions.js';
export { ServerLease, listLeases, parseHolder, leaseKey, leaseTrust, leaseValue, type LeaseHolder, type LeaseTrust, type AcquireResult } from './lease.js';
export { Singletons, DEFAULT_LEASE_MS, type SingletonsOptions } from './singletons.js';
export { RedisSignIns, type PrincipalSignIns, callbackUrlOf, OAUTH_CALLBACK_PATH, SIGN_IN_TTL_MS, type RedisSignInsOptions } from './oauth-callback.js';
