/**
 * Redaction of secrets in a server config before it is shown (`config`,
 * `config --json`). The config the user sees is the *expanded* one, so
 * `${GITHUB_TOKEN}` has already become the token: every value that can carry a
 * secret is hidden, and free text (args, URLs, the command) is scanned for
 * credential shapes.
 *
 * Over-redaction is the accepted failure mode: this output is for looking at,
 * never fed back into a config.
 */
import type { ServerConfig } from '../../machines/types.js';

/** What a hidden value is replaced with. */
export const REDACTED = '<redacted>';

/**
 * Names (flags, `NAME=value` keys, header names, query parameters, `auth`
 * keys) whose value is a secret more often than not.
 */
const SECRET_NAME =
  /token|secret|passw|pwd|api[-_]?key|access[-_]?key|private[-_]?key|auth|credential|cookie|session|jwt|dsn|webhook|signature|(^|[-_.])(key|sig|pat)($|[-_.])/i;

/** Names that look secret-ish but hold a location or a kind, not the secret (`--token-file PATH`). */
const LOCATION_NAME = /[-_](file|path|dir|env|var|type|mode|name|url|uri|endpoint)$/i;

/** Well-known token formats, found anywhere in a string. */
const TOKEN_SHAPES: readonly RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g, // GitLab
  /\bsk-[A-Za-z0-9_-]{20,}/g, // OpenAI, Anthropic (`sk-ant-…`)
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  /\b(AKIA|ASIA)[0-9A-Z]{16}\b/g, // AWS access key ids
  /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g, // JWT
];

function secretName(name: string): boolean {
  return SECRET_NAME.test(name) && !LOCATION_NAME.test(name);
}

/**
 * `text` with credential shapes hidden: URL user-info and secret query
 * parameters, `Bearer …` / `Basic …`, `name=value` and `Name: value` where
 * the name is secret-shaped, and well-known token formats.
 */
export function redactText(text: string): string {
  let out = text;
  // scheme://user:password@host keeps the user; scheme://token@host (GitHub, Sentry DSNs) hides it all.
  out = out.replace(/\b([a-z][a-z0-9+.-]*:\/\/)([^/\s:@?#]*)(?::([^/\s@?#]*))?@/gi, (_m, scheme: string, user: string, pass: string | undefined) =>
    pass === undefined ? `${scheme}${REDACTED}@` : `${scheme}${user}:${REDACTED}@`,
  );
  // ?token=… &key=… in URLs and query strings.
  out = out.replace(/([?&;])([^=&#\s]+)=([^&#\s]*)/g, (m, sep: string, name: string, value: string) =>
    value !== '' && secretName(name) ? `${sep}${name}=${REDACTED}` : m,
  );
  out = out.replace(/\b(Bearer|Basic)\s+[^\s"',;]+/gi, (_m, scheme: string) => `${scheme} ${REDACTED}`);
  // --token=abc, GITHUB_TOKEN=abc (docker -e), api_key=abc; not URLs (handled above).
  out = out.replace(/^(-{0,2}[A-Za-z0-9_.-]+)=(.+)$/s, (m, name: string) => (secretName(name.replace(/^-+/, '')) ? `${name}=${REDACTED}` : m));
  // Authorization: xyz, X-Api-Key: xyz (curl-style header args).
  out = out.replace(/^([A-Za-z0-9_-]+)\s*:\s*(?!\/\/)(.+)$/s, (m, name: string) => (secretName(name) ? `${name}: ${REDACTED}` : m));
  for (const shape of TOKEN_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}

/**
 * `args` with secrets hidden: each argument through {@link redactText}, and
 * the argument after a secret-named flag (`--api-key abc`) or after a lone
 * `Bearer` / `Basic` hidden whole.
 */
export function redactArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  let hideNext = false;
  for (const arg of args) {
    if (hideNext && !arg.startsWith('-')) {
      out.push(REDACTED);
      hideNext = false;
      continue;
    }
    const flag = /^-{1,2}([A-Za-z0-9][A-Za-z0-9_.-]*)$/.exec(arg);
    hideNext = (flag !== null && secretName(flag[1]!)) || /^(Bearer|Basic)$/i.test(arg);
    out.push(redactText(arg));
  }
  return out;
}

function redactRecord(rec: Record<string, string>): Record<string, string> {
  // Every value: a name like DATABASE_URL or MYSQL_PWD tells nothing reliable.
  return Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, v === '' ? '' : REDACTED]));
}

function redactUnknown(value: unknown, key?: string): unknown {
  if (typeof value === 'string') return key !== undefined && secretName(key) && value !== '' ? REDACTED : redactText(value);
  if (Array.isArray(value)) return value.map((v) => redactUnknown(v));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactUnknown(v, k)]));
  }
  return value;
}

/** Every occurrence of a known secret (a `password` input's answer) in `text`, hidden. */
function hideKnown(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s !== '') out = out.split(s).join(REDACTED);
  return out;
}

/**
 * A copy of `config` that is safe to print: every `env` and `headers` value
 * hidden, secrets in `args`, `command`, `url` and `auth` hidden, the answers
 * to `password` inputs (`secrets`) hidden wherever they went, and the
 * unserialisable in-process `instance` left out.
 */
export function redactServerConfig(config: ServerConfig, secrets: readonly string[] = []): Omit<ServerConfig, 'instance'> {
  if (secrets.length > 0) {
    const hidden = redactServerConfig(config);
    if (hidden.args) hidden.args = hidden.args.map((a) => hideKnown(a, secrets));
    for (const k of ['command', 'url', 'cwd', 'description', 'headersHelper'] as const) if (hidden[k] !== undefined) hidden[k] = hideKnown(hidden[k], secrets);
    return hidden;
  }
  const { instance: _instance, ...rest } = config;
  const out: Omit<ServerConfig, 'instance'> = { ...rest };
  if (rest.env) out.env = redactRecord(rest.env);
  if (rest.headers) out.headers = redactRecord(rest.headers);
  if (rest.args) out.args = redactArgs(rest.args);
  if (rest.command !== undefined) out.command = redactText(rest.command);
  if (rest.url !== undefined) out.url = redactText(rest.url);
  // A command line like the others: `echo '{"Authorization":"Bearer …"}'` must not print the token.
  if (rest.headersHelper !== undefined) out.headersHelper = redactText(rest.headersHelper);
  if (rest.auth) out.auth = redactUnknown(rest.auth) as Record<string, unknown>;
  if (rest.oauth) {
    // The client id is public and useful to see; the secret and the key never are.
    const oauth = { ...rest.oauth };
    if (oauth.clientSecret) oauth.clientSecret = REDACTED;
    if (oauth.privateKey) oauth.privateKey = REDACTED;
    out.oauth = oauth;
  }
  return out;
}
