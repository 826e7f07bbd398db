/** Gating: equality used to detect changes, fingerprints, and the computed gating lists (SPEC §2.3–§2.5). */
export { serversEqual, gatingEqual, type GatingLists } from './equality.js';
export { fingerprint, transportOf, CONNECTION_FIELDS } from './fingerprint.js';
export { computeGating, effectiveAllowed, mergeGatingSettings, type GatingInput, type GatingSettings, type ComputedGating } from './compute.js';
