/**
 * Line input on a terminal for the CLI's questions (`${input:…}` answers,
 * elicitation forms): one line at a time, typed-ahead text kept, and a
 * hidden mode for secrets.
 */
import type { CliIo } from './command.js';

/** A terminal's input stream. */
export type Stdin = NonNullable<CliIo['stdin']> & { isRaw?: boolean };

/** Reads answers from a terminal, one line at a time; keeps what was typed ahead. */
export class LineReader {
  private buffer = '';
  private ended = false;

  constructor(private readonly stdin: Stdin) {}

  /**
   * One line, or `undefined` on Ctrl-C / Ctrl-D / end of input. `hidden`
   * switches the terminal to raw mode so nothing typed is echoed; `prompt`
   * is shown only after that, so an answer typed at once is never echoed.
   */
  read(hidden: boolean, prompt: () => void = () => {}): Promise<string | undefined> {
    const stdin = this.stdin;
    const wasRaw = stdin.isRaw === true;
    if (hidden) stdin.setRawMode?.(true);
    prompt();
    return new Promise((resolve) => {
      const finish = (line: string | undefined): void => {
        stdin.off('data', onData);
        stdin.off('end', onEnd);
        stdin.pause();
        if (hidden) stdin.setRawMode?.(wasRaw);
        resolve(line);
      };
      const take = (): boolean => {
        let line = '';
        for (let i = 0; i < this.buffer.length; i++) {
          const c = this.buffer[i]!;
          if (c === '\r' || c === '\n') {
            // \r\n counts once.
            this.buffer = this.buffer.slice(i + (c === '\r' && this.buffer[i + 1] === '\n' ? 2 : 1));
            finish(line);
            return true;
          }
          if (c === '\x03' || (c === '\x04' && line === '')) {
            this.buffer = '';
            finish(undefined);
            return true;
          }
          if (c === '\x7f' || c === '\b') line = line.slice(0, -1);
          else if (c === '\x1b') {
            // An escape sequence (arrow keys): skip it up to its final byte.
            const m = /^\x1b\[?[0-9;]*[A-Za-z~]?/.exec(this.buffer.slice(i));
            i += (m?.[0].length ?? 1) - 1;
          } else if (c >= ' ') line += c;
        }
        return false;
      };
      const onData = (chunk: Buffer | string): void => {
        this.buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
        take();
      };
      const onEnd = (): void => {
        this.ended = true;
        finish(undefined);
      };
      if (take()) return;
      if (this.ended) return finish(undefined);
      stdin.on('data', onData);
      stdin.once('end', onEnd);
      stdin.resume();
    });
  }
}

