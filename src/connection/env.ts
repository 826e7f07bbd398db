/**
 * The environment a stdio server is started with (SPEC §8.2): an allow-list of
 * the host's variables that programs need to run (PATH, HOME, locale, proxy,
 * temp and CA settings), never anything credential-shaped, plus the server's
 * own `env`, which always wins.
 *
 * An allow-list, not a deny-list: secrets come under too many names
 * (`DATABASE_URL`, `SSH_AUTH_SOCK`, `SENTRY_DSN`, `MYSQL_PWD`, …) for any
 * pattern to catch them all, and a server that needs one can name it in its
 * entry (`"env": { "DATABASE_URL": "${DATABASE_URL}" }`).
 */

/**
 * Which parent variables a child inherits. Each field that is set replaces
 * the default for that field; unset fields keep the default, so
 * `{ keep: ['GITHUB_TOKEN'] }` only adds an exception.
 *
 * A parent variable is inherited when it is in `keep`, or when it is
 * admitted (by the built-in allow-list, by `allow`, or by
 * `inherit: 'all-but-credentials'`) and matches none of `hostPrefixes` and
 * `dropPatterns`. The deny side stays a second filter, so a host that widens
 * the allow-list still drops credentials unless it `keep`s them by name.
 * A policy is read once per variable name: change it by passing a new object.
 */
export interface EnvPolicy {
  /**
   * `'allowlist'` (default): only {@link DEFAULT_INHERITED_ENV} and `allow`
   * are admitted. `'all-but-credentials'`: every variable is admitted (the
   * old behaviour); the deny filters still apply.
   */
  inherit?: 'allowlist' | 'all-but-credentials';
  /** Admitted in addition to the built-in allow-list: exact names, or patterns tested against the name. */
  allow?: ReadonlyArray<string | RegExp>;
  /** A parent variable whose name matches any of these is dropped (names are tested as written). */
  dropPatterns?: RegExp[];
  /** The host's own prefixes (`DSH_`, …): its settings are nobody else's business. */
  hostPrefixes?: string[];
  /** Names always inherited, even when not allow-listed or when a pattern or prefix matches. */
  keep?: string[];
}

/**
 * The built-in allow-list: what a program needs to start and behave like it
 * does in the user's shell, nothing that authenticates.
 *
 * - the MCP SDK's `DEFAULT_INHERITED_ENV_VARS`, POSIX and Windows sets both
 *   (so behaviour does not depend on where the tests ran), plus `COMSPEC`,
 *   `PATHEXT`, `WINDIR`, `PROGRAMDATA` that `npx.cmd`-style launchers need;
 * - locale (`LANG`, `LANGUAGE`, `LC_*`, `TZ`);
 * - proxy settings, both spellings (servers behind a corporate proxy cannot
 *   reach anything without them; a proxy URL may carry a password, which
 *   the user already hands to every program they start);
 * - temp dirs, XDG base dirs, CA bundles (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_*`, …).
 *
 * `NODE_OPTIONS` is deliberately not here: the host's value is often a
 * debugger bootloader (`--require …/bootloader.js`, `--inspect`) or a test
 * runner's loader, which would attach to or break every Node server we
 * spawn, and it can load arbitrary code. A server that needs it names it.
 */
export const DEFAULT_INHERITED_ENV: readonly (string | RegExp)[] = Object.freeze([
  // MCP SDK, POSIX
  'HOME',
  'LOGNAME',
  'PATH',
  'SHELL',
  'TERM',
  'USER',
  // MCP SDK, Windows (names are case-insensitive there, see `sameName`)
  'APPDATA',
  'HOMEDRIVE',
  'HOMEPATH',
  'LOCALAPPDATA',
  'PROCESSOR_ARCHITECTURE',
  'SYSTEMDRIVE',
  'SYSTEMROOT',
  'TEMP',
  'USERNAME',
  'USERPROFILE',
  'PROGRAMFILES',
  'COMSPEC',
  'PATHEXT',
  'WINDIR',
  'PROGRAMDATA',
  // locale
  'LANG',
  'LANGUAGE',
  /^LC_[A-Z]+$/,
  'TZ',
  // proxy
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  // temp and XDG base directories
  'TMPDIR',
  'TMP',
  /^XDG_[A-Z]+_(HOME|DIRS?)$/,
  // CA bundles
  'NODE_EXTRA_CA_CERTS',
  'NODE_USE_SYSTEM_CA',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
]);

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
  inherit: 'allowlist' as const,
  allow: [],
  dropPatterns: [...DEFAULT_DROP_PATTERNS],
  hostPrefixes: ['DSH_', 'MCP_RECONCILER_'],
  keep: [],
});

// Windows treats `Path` and `PATH` as one variable; POSIX does not.
const caseInsensitiveNames = process.platform === 'win32';

function sameName(a: string, b: string): boolean {
  return caseInsensitiveNames ? a.toUpperCase() === b.toUpperCase() : a === b;
}

function matches(name: string, entry: string | RegExp): boolean {
  if (typeof entry === 'string') return sameName(name, entry);
  // `lastIndex` would make a /g pattern stateful across names.
  entry.lastIndex = 0;
  return entry.test(name);
}

/** Whether the parent variable `name` would be passed on under `policy`. */
export function inheritsVariable(name: string, policy: EnvPolicy = defaultEnvPolicy): boolean {
  const keep = policy.keep ?? defaultEnvPolicy.keep;
  if (keep.some((k) => sameName(name, k))) return true;
  const prefixes = policy.hostPrefixes ?? defaultEnvPolicy.hostPrefixes;
  if (prefixes.some((p) => name.toUpperCase().startsWith(p.toUpperCase()))) return false;
  const patterns = policy.dropPatterns ?? defaultEnvPolicy.dropPatterns;
  if (patterns.some((re) => matches(name, re))) return false;
  if ((policy.inherit ?? defaultEnvPolicy.inherit) === 'all-but-credentials') return true;
  const allow = policy.allow ?? defaultEnvPolicy.allow;
  return DEFAULT_INHERITED_ENV.some((e) => matches(name, e)) || allow.some((e) => matches(name, e));
}

/**
 * Each variable name's verdict per policy: a name's verdict never changes, and
 * checking ~50 names against ~60 patterns for every spawn cost ~100 ms of the
 * host's CPU when 50 servers start (docs/performance.md). Policies are taken as immutable.
 */
const decided = new WeakMap<EnvPolicy, Map<string, boolean>>();

/**
 * The child environment: the variables of `parentEnv` that `policy` lets
 * through, then `overlay` (the server's `env`), which always wins — a server
 * that needs a token or a `DATABASE_URL` gets it by naming it in its own config.
 */
export function childEnv(
  parentEnv: NodeJS.ProcessEnv,
  overlay: Readonly<Record<string, string>> | undefined,
  policy: EnvPolicy = defaultEnvPolicy,
): Record<string, string> {
  const out: Record<string, string> = {};
  let decisions = decided.get(policy);
  if (!decisions) decided.set(policy, (decisions = new Map()));
  // Names first, values only of inherited names: reading `process.env` makes a new string per
  // value, and most of a host's variables are not passed on (garbage at every spawn, docs/performance.md).
  for (const name of Object.keys(parentEnv)) {
    let inherit = decisions.get(name);
    if (inherit === undefined) decisions.set(name, (inherit = inheritsVariable(name, policy)));
    if (!inherit) continue;
    const value = parentEnv[name];
    if (value === undefined) continue;
    // An exported shell function (`() { …`) is code, not a setting (Shellshock); the SDK skips them too.
    if (value.startsWith('()')) continue;
    out[name] = value;
  }
  for (const [name, value] of Object.entries(overlay ?? {})) out[name] = value;
  return out;
}
