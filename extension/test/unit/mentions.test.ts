// The composer's special mentions (issue 30): what the `@` list offers, what a prompt sends (each mention
// once, never as text and chip), and the exact text `@problems` / `@terminal` give the model.
import { describe, expect, it } from 'vitest';
import { promptBlocks } from '../../src/panel/sessions';
import {
  formatProblems,
  formatTerminal,
  matchingMentions,
  namedInText,
  plainTerminalText,
  type Problem,
  problemsLabel,
  terminalLabel,
  textMentions,
} from '../../src/shared/mentions';
import type { ContextItem } from '../../src/shared/panelProtocol';
import { promptContext, withoutMention } from '../../src/webview/composer';
import { sentPrompt } from '../../src/webview/replay';

describe('the @ list', () => {
  it('offers every special mention with a one-line description, filtered by what is typed', () => {
    expect(matchingMentions('').map((m) => m.name)).toEqual(['problems', 'terminal', 'git', 'url']);
    for (const m of matchingMentions('')) expect(m.detail).toMatch(/^[^\n]{10,90}$/);
    expect(matchingMentions('TE').map((m) => m.name)).toEqual(['terminal']);
    expect(matchingMentions('src/')).toEqual([]);
  });

  it('takes a picked @name out of the text, leaving no double space', () => {
    expect(withoutMention('fix @pro please', 4, 'pro')).toEqual({ text: 'fix please', caret: 4 });
    expect(withoutMention('fix @problems', 4, 'problems')).toEqual({ text: 'fix', caret: 3 });
    expect(withoutMention('@t', 0, 't')).toEqual({ text: '', caret: 0 });
  });
});

describe('what a prompt sends', () => {
  it('reads @url and @git <sha> from the text, once each, without trailing punctuation', () => {
    const text = 'see @url https://example.com/a?b=1, and @url https://example.com/a?b=1 again; also @git 1a2B3c4d.';
    expect(textMentions(text)).toEqual([
      { kind: 'url', uri: 'https://example.com/a?b=1', label: 'https://example.com/a?b=1' },
      { kind: 'git', uri: 'sidecar://git/commit/1a2b3c4d', label: 'commit 1a2b3c4d' },
    ]);
    expect(textMentions('mail me@url https://x.y or @url ftp://x or @git main or @git abc')).toEqual([]);
  });

  it('sends each chip and text mention once, and never an error chip', () => {
    const chips: ContextItem[] = [
      { kind: 'problems', uri: 'sidecar://problems', label: 'Problems (1)', text: '1 problem' },
      { kind: 'terminal', uri: 'sidecar://terminal', label: 'Terminal', error: 'no terminal is open' },
      { kind: 'url', uri: 'https://a.example/x', label: 'https://a.example/x' },
    ];
    const files = new Map([['src/a.ts', 'file:///w/src/a.ts']]);
    const sent = promptContext('look at @src/a.ts and @url https://a.example/x', chips, files);
    expect(sent.map((c) => `${c.kind} ${c.uri}`)).toEqual([
      'problems sidecar://problems',
      'url https://a.example/x',
      'file file:///w/src/a.ts',
    ]);
  });

  it('gives the sidecar links for URLs and git, embedded text for problems and terminal', () => {
    const blocks = promptBlocks('why?', [
      { kind: 'problems', uri: 'sidecar://problems', label: 'Problems (1)', text: 'P' },
      { kind: 'terminal', uri: 'sidecar://terminal', label: 'Terminal (bash)', text: 'T' },
      { kind: 'git', uri: 'sidecar://git/diff', label: 'Git changes' },
      { kind: 'url', uri: 'https://a.example/x', label: 'https://a.example/x' },
      { kind: 'terminal', uri: 'sidecar://terminal', label: 'Terminal', error: 'no terminal is open' },
    ]);
    expect(blocks).toEqual([
      { type: 'text', text: 'why?' },
      { type: 'resource', resource: { uri: 'sidecar://problems', text: 'P', mimeType: 'text/plain' } },
      { type: 'resource', resource: { uri: 'sidecar://terminal', text: 'T', mimeType: 'text/plain' } },
      { type: 'resource_link', uri: 'sidecar://git/diff', name: 'Git changes' },
      { type: 'resource_link', uri: 'https://a.example/x', name: 'https://a.example/x' },
    ]);
  });

  it('replays the same chips, and a mention the text shows draws no chip', () => {
    const problems = formatProblems([{ path: 'a.ts', line: 1, column: 1, severity: 'error', message: 'x' }]).text;
    const terminal = formatTerminal('bash', [{ command: 'ls', output: 'a\n', exitCode: 0 }]).text;
    const back = sentPrompt(
      [
        { type: 'text', text: 'see @url https://a.example/x' },
        { type: 'resource', resource: { uri: 'sidecar://problems', text: problems } },
        { type: 'resource', resource: { uri: 'sidecar://terminal', text: terminal } },
        { type: 'resource_link', uri: 'sidecar://git/diff', name: 'Git changes' },
        { type: 'resource_link', uri: 'https://a.example/x', name: 'https://a.example/x' },
      ],
      ['/w'],
    );
    expect(back.context.map((c) => `${c.kind}: ${c.label}`)).toEqual([
      'problems: Problems (1)',
      'terminal: Terminal (bash)',
      'git: Git changes',
      'url: https://a.example/x',
    ]);
    const url = back.context[3];
    expect(url && namedInText(back.text, url)).toBe(true);
    expect(problemsLabel('garbage')).toBe('Problems (0)');
    expect(terminalLabel('garbage')).toBe('Terminal (?)');
  });
});

describe('@problems text', () => {
  const p = (path: string, line: number, severity: 'error' | 'warning', message: string, source?: string, code?: string): Problem => ({
    path,
    line,
    column: 3,
    severity,
    message,
    ...(source ? { source } : {}),
    ...(code ? { code } : {}),
  });

  it('puts errors first, by file and line, with source and code', () => {
    const out = formatProblems([
      p('b.ts', 9, 'warning', "'x' is declared but never used.", 'ts', '6133'),
      p('b.ts', 2, 'error', "Type 'string' is not assignable\n  to type 'number'.", 'ts', '2322'),
      p('a.py', 7, 'error', '"nme" is not defined', 'Pyright'),
    ]);
    expect(out.label).toBe('Problems (3)');
    expect(out.text).toBe(
      [
        '3 problems in the workspace (2 errors, 1 warning):',
        'a.py:7:3 error (Pyright): "nme" is not defined',
        "b.ts:2:3 error (ts 2322): Type 'string' is not assignable to type 'number'.",
        "b.ts:9:3 warning (ts 6133): 'x' is declared but never used.",
      ].join('\n'),
    );
  });

  it('is bounded and says so; none is said too', () => {
    const many = Array.from({ length: 70 }, (_, i) => p(`f${String(i).padStart(2, '0')}.ts`, 1, i % 2 ? 'warning' : 'error', 'm'));
    const out = formatProblems(many);
    const lines = out.text.split('\n');
    expect(lines[0]).toBe('70 problems in the workspace (35 errors, 35 warnings); the first 50, errors first:');
    expect(lines).toHaveLength(51);
    expect(lines.slice(1, 36).every((l) => l.includes(' error: '))).toBe(true);
    expect(out.label).toBe('Problems (70)');
    expect(formatProblems([]).text).toBe('No errors or warnings in the workspace.');
  });
});

describe('@terminal text', () => {
  it('drops escape sequences and lines overwritten by a carriage return', () => {
    const raw = '\x1b]633;C\x07\x1b[32mok\x1b[0m 1 passed\r\n10%\r50%\r100% done\n\x1b]633;D;0\x07';
    expect(plainTerminalText(raw)).toBe('ok 1 passed\n100% done\n');
  });

  it('keeps the last commands oldest first, each output cut to its end', () => {
    const runs = [
      { command: 'echo one', output: 'one\n', exitCode: 0 },
      { command: 'npm test', output: `${'x'.repeat(5000)}\nFAIL 2 tests\n`, exitCode: 1 },
      { command: 'sleep 9', output: '', running: true },
      { command: 'cd src', output: '\x1b]633;D;0\x07', exitCode: 0 },
    ];
    const { text, label } = formatTerminal('bash', runs);
    expect(label).toBe('Terminal (bash)');
    const parts = text.split('\n\n');
    expect(parts[0]).toBe('Terminal "bash": the last 4 commands, oldest first');
    expect(parts[1]).toBe('$ echo one\none\n(exit code 0)');
    expect(parts[2]).toMatch(/^\$ npm test\n\[… \d+ characters cut\]\nx+\nFAIL 2 tests\n\(exit code 1\)$/);
    expect(parts[2]?.length).toBeLessThan(4100);
    expect(parts[3]).toBe('$ sleep 9\n(still running)');
    expect(parts[4]).toBe('$ cd src\n(no output captured)\n(exit code 0)');
  });

  it('keeps at most 5 commands and 12,000 characters, the newest kept', () => {
    const runs = Array.from({ length: 8 }, (_, i) => ({ command: `c${i}`, output: 'y'.repeat(3900), exitCode: 0 }));
    const { text } = formatTerminal('zsh', runs);
    expect(text.length).toBeLessThan(12200);
    expect(text).toContain('$ c7');
    expect(text).not.toContain('$ c4');
    expect(text.startsWith('Terminal "zsh": the last 3 commands')).toBe(true);
  });
});
