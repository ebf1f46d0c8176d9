// @terminal's record of each command's output (src/editorContext.ts): the last 16 KB of it, appended to
// without copying the whole tail per chunk.
import { afterEach, describe, expect, it } from 'vitest';
import { TailText, TerminalLog } from '../../src/editorContext';
import { MAX_COMMAND_OUTPUT } from '../../src/shared/mentions';
import { terminalEvents, window } from '../mocks/vscode';

describe('the tail of a stream', () => {
  it('holds the last characters appended, whatever the chunk sizes, and less than twice its bound', () => {
    const bound = 1000;
    const tail = new TailText(bound);
    let all = '';
    let seed = 7;
    const next = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 3000; i++) {
      // mostly small chunks, now and then one larger than the bound
      const size = next(50) === 0 ? bound + next(500) : next(120);
      const chunk = String.fromCharCode(97 + (i % 26)).repeat(size) + String(i);
      tail.append(chunk);
      all += chunk;
      expect(tail.toString()).toBe(all.slice(-bound));
      expect(tail.retained).toBeLessThan(2 * bound); // the oldest chunk kept is at most `bound` long
    }
    expect(tail.toString().length).toBe(bound);
    const short = new TailText(10);
    short.append('abc');
    short.append('');
    short.append('de');
    expect(short.toString()).toBe('abcde');
  });
});

describe('@terminal', () => {
  let log: TerminalLog | undefined;
  afterEach(() => {
    log?.dispose();
    window.activeTerminal = undefined;
  });

  it('shows the command and the end of its output, read chunk by chunk as it ran', async () => {
    log = new TerminalLog();
    const terminal = { name: 'bash', shellIntegration: {} };
    let release!: () => void;
    const ended = new Promise<void>((r) => (release = r));
    const chunks = Array.from({ length: 400 }, (_, i) => `line ${i} ${'x'.repeat(90)}\n`);
    const execution = {
      commandLine: { value: 'make test' },
      async *read() {
        for (const c of chunks) yield c;
        await ended;
      },
    };
    terminalEvents.start.fire({ terminal, execution });
    await new Promise((r) => setTimeout(r, 0));
    window.activeTerminal = terminal;
    const running = log.item();
    expect(running.text).toContain('$ make test');
    expect(running.text).toContain('line 399');
    expect(running.text).toContain('(still running)');
    expect(running.text).not.toContain('line 300 '); // more than MAX_COMMAND_OUTPUT back: cut
    expect(running.text).toMatch(/\[… \d+ characters cut\]/);
    expect((running.text ?? '').length).toBeLessThan(MAX_COMMAND_OUTPUT + 200);
    release();
    terminalEvents.end.fire({ terminal, execution, exitCode: 2 });
    expect(log.item().text).toContain('(exit code 2)');
  });
});
