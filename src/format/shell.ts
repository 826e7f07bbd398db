/** Words a POSIX shell reads as themselves: no quoting needed, so common names stay readable. */
const SHELL_SAFE = /^[A-Za-z0-9_./:@%+=,-]+$/;

/**
 * `word` as one POSIX shell word: unchanged when it is made of safe
 * characters only, else in single quotes with each `'` written `'\''`.
 * Server names come from checked-in config files, so a suggested command
 * that is pasted into a shell must not run anything a name smuggles in.
 */
export function shellQuote(word: string): string {
  if (SHELL_SAFE.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
