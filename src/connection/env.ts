/**
 * The environment a stdio server is started with (SPEC §8.2): the host's
 * environment minus anything credential-shaped, plus the server's own `env`.
 */

/**
 * Which parent variables a child must not inherit. Each field that is set
 * replaces the default for that field; unset fields keep the default, so
 * `{ keep: ['GITHUB_TOKEN'] }` only adds an exception.
 */
export interface EnvPolicy {
  /** A parent variable whose name matches any of these is dropped (names are tested as written). */
  dropPatterns?: RegExp[];
  /** The host's own prefixes (`DSH_`, …): its settings are nobody else's business. */
  hostPrefixes?: string[];
  /** Names always inherited even when a pattern or prefix matches. */
  keep?: string[];
}

/** Credential-shaped names and cloud provider credentials. */
const DEFAULT_DROP_PATTERNS: readonly RegExp[] = [
  /TOKEN/i,
  /SECRET/i,
  /PASSWORD/i,
  /PASSWD/i,
  /CREDENTIAL/i,
  /_KEY$/i,
  /API_KEY/i,
  /^AWS_/i,
  /^AZURE_/i,
  /^ARM_CLIENT/i,
  /^GOOGLE_APPLICATION_CREDENTIALS$/i,
  /^GOOGLE_CLOUD_KEYFILE/i,
  /^GCP_/i,
  /^GCLOUD_/i,
  /^CLOUDSDK_AUTH_/i,
];

/** The policy used when the host gives none. Frozen: copy it to change it. */
export const defaultEnvPolicy: Readonly<Required<EnvPolicy>> = Object.freeze({
  dropPatterns: [...DEFAULT_DROP_PATTERNS],
  hostPrefixes: ['DSH_', 'MCP_RECONCILER_'],
  keep: [],
});

/** Whether the parent variable `name` would be passed on under `policy`. */
export function inheritsVariable(name: string, policy: EnvPolicy = defaultEnvPolicy): boolean {
  const keep = policy.keep ?? defaultEnvPolicy.keep;
  if (keep.includes(name)) return true;
  const prefixes = policy.hostPrefixes ?? defaultEnvPolicy.hostPrefixes;
  if (prefixes.some((p) => name.toUpperCase().startsWith(p.toUpperCase()))) return false;
  const patterns = policy.dropPatterns ?? defaultEnvPolicy.dropPatterns;
  // `lastIndex` would make a /g pattern stateful across names.
  return !patterns.some((re) => {
    re.lastIndex = 0;
    return re.test(name);
  });
}

/**
 * The child environment: `parentEnv` without the variables `policy` drops,
 * then `overlay` (the server's `env`), which always wins — a server that needs
 * a token gets it by naming it in its own config.
 */
export function childEnv(
  parentEnv: NodeJS.ProcessEnv,
  overlay: Readonly<Record<string, string>> | undefined,
  policy: EnvPolicy = defaultEnvPolicy,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parentEnv)) {
    if (value === undefined) continue;
    if (inheritsVariable(name, policy)) out[name] = value;
  }
  for (const [name, value] of Object.entries(overlay ?? {})) out[name] = value;
  return out;
}
