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
