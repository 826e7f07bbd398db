import { PassThrough } from 'node:stream';
import { runCli } from '../../src/cli/main.js';

/** What one in-process CLI run printed, and its exit code. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI in-process with `argv` and capture what it prints. */
export async function runCliCaptured(argv: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
    cwd,
  });
  return { code, stdout, stderr };
}

/**
 * Run the CLI in-process on a fake terminal (stdin and stdout are TTYs). After
 * each write to stderr, `onStderr` sees all of stderr so far and may `type`
 * answers, each sent with Enter, as a person would once a prompt is on screen.
 */
export async function runCliOnTerminal(
  argv: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  onStderr: (stderr: string, type: (answer: string) => void) => void,
): Promise<CliRun> {
  const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
  const type = (answer: string): void => void stdin.write(`${answer}\r`);
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        onStderr(stderr, type);
      },
    },
    env,
    cwd,
    stdin,
    isTTY: true,
  });
  return { code, stdout, stderr };
}

/** `config --json`'s servers as `NAME SCOPE VERDICT`, in the order printed. */
export function serverVerdicts(stdout: string): string[] {
  const doc = JSON.parse(stdout) as { servers: { name: string; scope: string; verdict: string }[] };
  return doc.servers.map((s) => `${s.name} ${s.scope} ${s.verdict}`);
}
