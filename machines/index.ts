/**
 * The pure machines (no I/O): `serverMachine`, `reconcilerMachine`, the
 * admission rule, the state → reason projection and the shared data types.
 * `src/` provides the I/O with `.provide()`.
 */
export * from './types.js';
export * from './admission.js';
export * from './server.machine.js';
export * from './reconciler.machine.js';
export * from './reason.js';
