/**
 * Run a command on a real pseudo-terminal (python3's `pty` module) and type
 * answers as prompts appear: what the terminal showed (echo included) and
 * the exit status come back. For the CLI's questions (`${input:…}`,
 * elicitation), where a fake stream cannot show what a terminal echoes.
 */
import { spawnSync } from 'node:child_process';

/** Whether python3 with its `pty` module is available. */
export const ptyAvailable = spawnSync('python3', ['-c', 'import pty'], { encoding: 'utf8' }).status === 0;

// Answers the next prompt once it is on screen (after what was already answered) and the
// output ends as a prompt does (": " or "] ").
const SCRIPT = `
import json, os, pty, select, subprocess, sys
answers = [(a.encode(), b.encode()) for a, b in json.loads(sys.argv[1])]
m, s = pty.openpty()
p = subprocess.Popen(sys.argv[2:], stdin=s, stdout=s, stderr=s, close_fds=True)
os.close(s)
out, step, seen = b'', 0, 0
try:
    while True:
        r, _, _ = select.select([m], [], [], 30)
        if not r:
            break
        try:
            data = os.read(m, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
        if step < len(answers) and answers[step][0] in out[seen:] and out.endswith((b': ', b'] ')):
            os.write(m, answers[step][1]); step += 1; seen = len(out)
    p.wait(timeout=30)
finally:
    if p.poll() is None:
        p.kill(); p.wait()
sys.stdout.write(out.decode('utf8', 'replace'))
sys.exit(p.returncode)
`;

/**
 * Run `command` on a pseudo-terminal; each `[prompt, reply]` pair types
 * `reply` (add `\r` for Enter) once `prompt` shows, in order.
 */
export function runInPty(command: readonly string[], answers: ReadonlyArray<readonly [string, string]>, env: NodeJS.ProcessEnv): { status: number | null; output: string } {
  const r = spawnSync('python3', ['-c', SCRIPT, JSON.stringify(answers), ...command], { encoding: 'utf8', env, timeout: 60_000 });
  return { status: r.status, output: r.stdout };
}
