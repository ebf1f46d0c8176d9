// The tool cards' words: summaries, path shortening, diffs, capping; the scroll rule; fuzzy @ matching.
import { describe, expect, it } from 'vitest';
import { fuzzyFilter, withFolders } from '../../src/fuzzy';
import { atBottom, ScrollFollower } from '../../src/webview/scroll';
import { capLines, compactDiff, diffStats, editOutsideRoots, lineDiff, pathSegments, relativePath, shortPath, splitPath, type ToolState, tokenSize, toolSummary, userDecisionOf } from '../../src/webview/summary';

const roots = ['/home/u/shop'];
const card = (over: Partial<ToolState>): ToolState => ({ id: 't', title: '', kind: 'other', status: 'completed', rawInput: {}, content: [], ...over });
const text = (t: string) => [{ type: 'content', content: { type: 'text', text: t } }];

describe('paths', () => {
  it('are workspace-relative with the file name first', () => {
    expect(relativePath('/home/u/shop/src/pricing.py', roots)).toBe('src/pricing.py');
    expect(splitPath('/home/u/shop/src/pricing.py', roots)).toEqual({ name: 'pricing.py', dir: 'src' });
    expect(shortPath('/home/u/shop/pricing.py', roots)).toBe('pricing.py');
    expect(shortPath('/home/u/shop/src/a/pricing.py', roots)).toBe('pricing.py (src/a)');
  });
  it('outside every root stay absolute; a sibling with the same prefix is outside', () => {
    expect(relativePath('/etc/hosts', roots)).toBe('/etc/hosts');
    expect(relativePath('/home/u/shopping/x.py', roots)).toBe('/home/u/shopping/x.py');
    expect(relativePath('C:\\w\\src\\a.ts', ['C:\\w'])).toBe('src/a.ts');
  });
});

describe('the outside-the-workspace badge', () => {
  it('marks an Edit, Write or NotebookEdit of a file outside every root, and nothing else', () => {
    expect(editOutsideRoots(card({ tool: 'Write', rawInput: { file_path: '/home/u/notes/x.txt', content: 'a' } }), roots)).toBe('/home/u/notes/x.txt');
    expect(editOutsideRoots(card({ tool: 'Edit', rawInput: { file_path: '/home/u/shopping/x.py', old_string: 'a', new_string: 'b' } }), roots)).toBe('/home/u/shopping/x.py');
    expect(editOutsideRoots(card({ tool: 'NotebookEdit', rawInput: { notebook_path: '/tmp/n.ipynb' } }), roots)).toBe('/tmp/n.ipynb');
    // inside, a second root, a read, no roots known, no path: no badge
    expect(editOutsideRoots(card({ tool: 'Write', rawInput: { file_path: '/home/u/shop/x.txt', content: 'a' } }), roots)).toBeNull();
    expect(editOutsideRoots(card({ tool: 'Edit', rawInput: { file_path: '/srv/lib/y.py' } }), [...roots, '/srv/lib/'])).toBeNull();
    expect(editOutsideRoots(card({ tool: 'Read', rawInput: { file_path: '/etc/hosts' } }), roots)).toBeNull();
    expect(editOutsideRoots(card({ tool: 'Write', rawInput: { file_path: '/etc/hosts', content: '' } }), [])).toBeNull();
    expect(editOutsideRoots(card({ tool: 'Write', rawInput: {} }), roots)).toBeNull();
  });
});

describe('card summaries', () => {
  it('Edit counts added and removed lines', () => {
    const s = card({ tool: 'Edit', rawInput: { file_path: '/home/u/shop/pricing.py', old_string: 'a\nb\nc', new_string: 'a\nB\nc\nd\ne' } });
    expect(toolSummary(s, roots)).toBe('Edit pricing.py +3 −1');
    // the landed diff wins over the input
    const landed = card({ ...s, content: [{ type: 'diff', path: '/home/u/shop/pricing.py', oldText: 'x\n', newText: 'x\ny\n' }] });
    expect(toolSummary(landed, roots)).toBe('Edit pricing.py +1 −0');
  });
  it('Grep reports matches and files from content output', () => {
    const out = ['src/a.py:3:discount = 1', 'src/a.py:9:discount()', 'src/b.py-4-context', 'src/b.py:5:discount'].join('\n');
    expect(toolSummary(card({ tool: 'Grep', rawInput: { pattern: 'discount', output_mode: 'content' }, content: text(out) }), roots)).toBe('Grep "discount" — 3 matches in 2 files');
    expect(toolSummary(card({ tool: 'Grep', rawInput: { pattern: 'x' }, content: text('Found 5 files\na\nb') }), roots)).toBe('Grep "x" — 5 files');
    expect(toolSummary(card({ tool: 'Grep', rawInput: { pattern: 'x', output_mode: 'count' }, content: text('a:10\nb:4\n\nFound 14 total occurrences across 5 files.') }), roots)).toBe(
      'Grep "x" — 14 matches in 5 files',
    );
    expect(toolSummary(card({ tool: 'Grep', rawInput: { pattern: 'x' }, content: text('No files found') }), roots)).toBe('Grep "x" — no matches');
  });
  it('Bash shows the command and its exit code', () => {
    const s = card({ tool: 'Bash', status: 'failed', rawInput: { command: 'pytest -q' }, metadata: { exit_code: 1 } });
    expect(toolSummary(s, roots)).toBe('Bash `pytest -q` — exit 1');
    expect(toolSummary({ ...s, status: 'pending' }, roots)).toBe('Bash `pytest -q`');
    expect(toolSummary({ ...s, metadata: { timed_out: true, exit_code: null } }, roots)).toBe('Bash `pytest -q` — timed out');
  });
  it('Bash takes the model\'s description as its title, the command after it', () => {
    const s = card({ tool: 'Bash', status: 'completed', rawInput: { command: 'seq 1 500', description: 'Print 500 lines' }, metadata: { exit_code: 0 } });
    expect(toolSummary(s, roots)).toBe('Print 500 lines: `seq 1 500` — exit 0');
  });
  it('two TodoWrite cards read differently', () => {
    const a = card({ tool: 'TodoWrite', rawInput: { todos: [{ content: 'a', status: 'in_progress', activeForm: 'Doing a' }, { content: 'b', status: 'pending' }] } });
    const b = card({ tool: 'TodoWrite', rawInput: { todos: [{ content: 'a', status: 'completed' }, { content: 'b', status: 'in_progress', activeForm: 'Doing b' }] } });
    expect(toolSummary(a, roots)).toBe('Todos 0/2 done · Doing a');
    expect(toolSummary(b, roots)).toBe('Todos 1/2 done · Doing b');
  });
  it('Read, Task, Glob and an unknown tool', () => {
    expect(toolSummary(card({ tool: 'Read', rawInput: { file_path: '/home/u/shop/src/x.ts', offset: 10, limit: 5 } }), roots)).toBe('Read x.ts (src) lines 10–14');
    expect(toolSummary(card({ tool: 'Task', rawInput: { subagent_type: 'Explore', description: 'Find alpha' }, metadata: { tool_calls: 3 } }), roots)).toBe('Explore: Find alpha — 3 tool calls');
    expect(toolSummary(card({ tool: 'Glob', rawInput: { pattern: '**/*.py' }, metadata: { count: 12 } }), roots)).toBe('Glob **/*.py — 12 files');
    expect(toolSummary(card({ tool: 'mcp__x__y', title: 'x: y' }), roots)).toBe('x: y');
  });
  it('the tool is guessed from the input when _meta does not name it', () => {
    expect(toolSummary(card({ rawInput: { command: 'ls' } }), roots)).toBe('Bash `ls` — exit 0');
  });
  it('a rejection is the user decision, with the note; other failures are not', () => {
    expect(userDecisionOf(card({ status: 'failed', content: text('The user rejected this tool call; it did not run. The user said: use mkdir Do not retry the same call.') }))).toEqual({
      outcome: 'rejected',
      feedback: 'use mkdir',
    });
    expect(userDecisionOf(card({ status: 'failed', content: text('The user rejected your edit to a.py; nothing was written. Do not retry') }))).toEqual({ outcome: 'rejected', feedback: undefined });
    expect(userDecisionOf(card({ status: 'failed', content: text('The user cancelled this request; the tool did not run.') }))).toEqual({ outcome: 'cancelled' });
    expect(userDecisionOf(card({ status: 'failed', content: text('Exit code 1') }))).toBeUndefined();
  });
});

describe('diffs and output', () => {
  it('a line diff puts removals before additions and keeps numbers', () => {
    const d = lineDiff('a\nb\nc\n', 'a\nB\nc\nd\n');
    expect(d.map((l) => l.kind + l.text)).toEqual([' a', '-b', '+B', ' c', '+d']);
    expect(diffStats(d)).toEqual({ added: 2, removed: 1 });
    expect(d[2]).toMatchObject({ newNo: 2 });
  });
  it('compact diffs keep context around changes only', () => {
    const old = Array.from({ length: 30 }, (_, i) => `l${i}`).join('\n');
    const d = compactDiff(lineDiff(old, old.replace('l15', 'X')), 1);
    expect(d.map((l) => (l ? l.kind + l.text : '…'))).toEqual(['…', ' l14', '-l15', '+X', ' l16', '…']);
  });
  it('output is capped at 20 lines', () => {
    const t = Array.from({ length: 500 }, (_, i) => `line ${i + 1}`).join('\n');
    const c = capLines(t, 20);
    expect(c.shown.split('\n')).toHaveLength(20);
    expect(c.hidden).toBe(480);
    expect(capLines('a\nb\n').hidden).toBe(0);
  });
});

describe('the scroll rule', () => {
  it('follows only at the bottom; new content while scrolled up raises the pill', () => {
    const f = new ScrollFollower();
    expect(f.onContent()).toBe('scroll');
    f.onScroll({ scrollTop: 100, clientHeight: 500, scrollHeight: 2000 }); // the user scrolled up
    expect(f.following).toBe(false);
    expect(f.onContent()).toBe('pill');
    expect(f.unseen).toBe(true);
    f.onScroll({ scrollTop: 1490, clientHeight: 500, scrollHeight: 2000 }); // back at the bottom (10 px slack)
    expect(f.following).toBe(true);
    expect(f.unseen).toBe(false);
    expect(f.onContent()).toBe('scroll');
    f.onScroll({ scrollTop: 0, clientHeight: 500, scrollHeight: 2000 });
    f.jump();
    expect(f.onContent()).toBe('scroll');
  });
  it('bottom has a small slack', () => {
    expect(atBottom({ scrollTop: 1476, clientHeight: 500, scrollHeight: 2000 })).toBe(true);
    expect(atBottom({ scrollTop: 1400, clientHeight: 500, scrollHeight: 2000 })).toBe(false);
  });
});

describe('@ completion matching', () => {
  it('prefers file-name matches, then word starts; folders are candidates', () => {
    const entries = withFolders(['src/pricing.py', 'docs/principles.md', 'src/api/print_report.py', 'tests/test_pricing.py', 'README.md']);
    const got = fuzzyFilter('pri', entries, 5).map((e) => e.path);
    expect(got[0]).toBe('src/pricing.py');
    expect(got).toContain('tests/test_pricing.py');
    expect(fuzzyFilter('srcapi', entries, 3).map((e) => e.path)[0]).toBe('src/api/');
    expect(fuzzyFilter('zzz', entries)).toEqual([]);
  });
  // Correctness at scale only: its speed is printed, never asserted (a timed test fails on a loaded machine).
  it('answers a keystroke on 100k files', () => {
    const files = Array.from({ length: 100_000 }, (_, i) => `pkg${i % 300}/module${i % 97}/file_${i}.ts`);
    const entries = withFolders(files);
    const t0 = performance.now();
    const r = fuzzyFilter('fil99', entries, 30);
    const ms = performance.now() - t0;
    expect(r.length).toBe(30);
    console.log(`fuzzy @ on 100k files: ${ms.toFixed(1)} ms`);
  });
});

describe('context size in the footer', () => {
  it('reads as the model pages write it: 200k, 1M, never 1000k', () => {
    expect(tokenSize(200_000)).toBe('200k');
    expect(tokenSize(1_000_000)).toBe('1M');
    expect(tokenSize(1_500_000)).toBe('1.5M');
    expect(tokenSize(999_999)).toBe('1M');
    expect(tokenSize(512)).toBe('512');
  });
});

describe('paths in tool output', () => {
  const roots = ['/ws'];
  it('Grep hits become file:line links, file name first, the folder after; the rest stays text', () => {
    expect(pathSegments('/ws/src/shop/pricing.py:2:    # apply the discount\n/ws/notes.txt:14:x', roots)).toEqual([
      { path: '/ws/src/shop/pricing.py', line: 2, name: 'pricing.py:2', dir: 'src/shop' },
      ':    # apply the discount\n',
      { path: '/ws/notes.txt', line: 14, name: 'notes.txt:14', dir: '' },
      ':x',
    ]);
  });
  it('Glob lists and traceback frames link too; paths outside the roots and look-alikes stay text', () => {
    expect(pathSegments('/ws/a.py\n/ws/b/c.ts\n', roots)).toEqual([
      { path: '/ws/a.py', name: 'a.py', dir: '' },
      '\n',
      { path: '/ws/b/c.ts', name: 'c.ts', dir: 'b' },
      '\n',
    ]);
    expect(pathSegments('  File "/ws/pricing.py", line 3, in price', roots)).toEqual([
      '  File "',
      { path: '/ws/pricing.py', line: 3, name: 'pricing.py:3', dir: '' },
      '", line 3, in price',
    ]);
    expect(pathSegments('see /etc/passwd and /wsx/a.py or x/ws/a.py.', roots)).toEqual(['see /etc/passwd and /wsx/a.py or x/ws/a.py.']);
    expect(pathSegments('wrote /ws/out.txt.', roots)).toEqual(['wrote ', { path: '/ws/out.txt', name: 'out.txt', dir: '' }, '.']);
    expect(pathSegments('no roots /ws/a', [])).toEqual(['no roots /ws/a']);
  });
});
