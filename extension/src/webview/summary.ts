/**
 * Pure functions behind the tool cards: workspace-relative paths with the file name first, a one-line human
 * summary per tool, line diffs for Edit/Write, and output capping. No DOM here, so vitest runs them in Node.
 */

import { insideRoots, relativeTo } from '../shared/paths';

export interface ToolContentItem {
  type: string;
  content?: { type?: string; text?: string } | undefined;
  path?: string;
  oldText?: string | null;
  newText?: string;
}

/** What the webview knows about one tool call, folded from `tool_call` and its `tool_call_update`s. */
export interface ToolState {
  id: string;
  tool?: string | undefined;
  title: string;
  kind: string;
  status: string;
  rawInput: Record<string, unknown>;
  content: ToolContentItem[];
  /** `_meta.sidecar.metadata` of the final update (exit_code, count, …). */
  metadata?: Record<string, unknown> | undefined;
  parentId?: string | undefined;
  /** The user's own decision on the approval or review: shown as such, never as a failure. */
  decision?: { outcome: 'rejected' | 'cancelled'; feedback?: string | undefined } | undefined;
  /** The allowing option the user chose ("Allow once"): the card says "You chose: …", after a reload too. */
  chosen?: string | undefined;
}

// ------------------------------------------------------------------------------------------- paths
// (whether a path is in a root, and where: shared/paths.ts, which the extension host uses too)

function norm(p: string): string {
  return p.replace(/\\/g, '/').replace(/\/+$/, '');
}

/** `p` relative to the first root that contains it (`.` for the root itself); outside every root, the absolute path. */
export function relativePath(p: string, roots: readonly string[]): string {
  const rel = relativeTo(p, roots);
  return rel === null ? norm(p) : rel || '.';
}

/**
 * The file an Edit, Write or NotebookEdit changes when it is outside every workspace root (the card says so
 * with a badge, issue 25), else null. With no roots known there is no outside.
 */
export function editOutsideRoots(s: ToolState, roots: readonly string[]): string | null {
  const tool = toolName(s);
  if (tool !== 'Edit' && tool !== 'Write' && tool !== 'NotebookEdit') return null;
  const p = s.rawInput[tool === 'NotebookEdit' ? 'notebook_path' : 'file_path'];
  if (typeof p !== 'string' || !p || !roots.some((r) => r.trim())) return null;
  return insideRoots(p, roots) ? null : p;
}

/** A path as the cards show it: the file name, then the folder it is in (dimmed), both workspace-relative. */
export function splitPath(p: string, roots: readonly string[]): { name: string; dir: string } {
  const rel = relativePath(p, roots);
  const i = rel.lastIndexOf('/');
  if (i < 0) return { name: rel, dir: '' };
  return { name: rel.slice(i + 1) || rel, dir: rel.slice(0, i) || '/' };
}

/** "pricing.py" or "pricing.py (src/shop)": the one-line form used inside summaries. */
export function shortPath(p: string, roots: readonly string[]): string {
  const { name, dir } = splitPath(p, roots);
  return dir ? `${name} (${dir})` : name;
}

// ------------------------------------------------------------------------------------------- diffs

export interface DiffLine {
  kind: ' ' | '+' | '-';
  text: string;
  /** 1-based line numbers on each side (absent on the side the line is not on). */
  oldNo?: number;
  newNo?: number;
}

function lines(text: string | null | undefined): string[] {
  if (!text) return [];
  const l = text.split('\n');
  if (l.length > 1 && l[l.length - 1] === '') l.pop();
  return l;
}

/** A line diff (LCS over the part between the common prefix and suffix; capped, then plain replace). */
export function lineDiff(oldText: string | null | undefined, newText: string | null | undefined): DiffLine[] {
  const a = lines(oldText);
  const b = lines(newText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const out: DiffLine[] = [];
  for (let i = 0; i < pre; i++) out.push({ kind: ' ', text: a[i] as string, oldNo: i + 1, newNo: i + 1 });
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const n = am.length;
  const m = bm.length;
  if (n * m <= 250_000) {
    // lcs[i][j]: length of the LCS of am[i..] and bm[j..]
    const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      const row = lcs[i] as Uint32Array;
      const next = lcs[i + 1] as Uint32Array;
      for (let j = m - 1; j >= 0; j--) row[j] = am[i] === bm[j] ? (next[j + 1] as number) + 1 : Math.max(next[j] as number, row[j + 1] as number);
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        out.push({ kind: ' ', text: am[i] as string, oldNo: pre + i + 1, newNo: pre + j + 1 });
        i++;
        j++;
      } else if (j < m && (i >= n || (lcs[i]?.[j + 1] ?? 0) >= (lcs[i + 1]?.[j] ?? 0))) {
        out.push({ kind: '+', text: bm[j] as string, newNo: pre + j + 1 });
        j++;
      } else {
        out.push({ kind: '-', text: am[i] as string, oldNo: pre + i + 1 });
        i++;
      }
    }
  } else {
    am.forEach((t, k) => out.push({ kind: '-', text: t, oldNo: pre + k + 1 }));
    bm.forEach((t, k) => out.push({ kind: '+', text: t, newNo: pre + k + 1 }));
  }
  // Removed lines before added ones inside each changed run reads better.
  for (let s = 0; s < out.length; ) {
    if (out[s]?.kind === ' ') {
      s++;
      continue;
    }
    let e = s;
    while (e < out.length && out[e]?.kind !== ' ') e++;
    const run = out.slice(s, e);
    out.splice(s, e - s, ...run.filter((l) => l.kind === '-'), ...run.filter((l) => l.kind === '+'));
    s = e;
  }
  for (let k = 0; k < suf; k++) {
    out.push({ kind: ' ', text: a[a.length - suf + k] as string, oldNo: a.length - suf + k + 1, newNo: b.length - suf + k + 1 });
  }
  return out;
}

export function diffStats(d: readonly DiffLine[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of d) {
    if (l.kind === '+') added++;
    else if (l.kind === '-') removed++;
  }
  return { added, removed };
}

/** Only the changed lines and `context` lines around them; `null` entries stand for skipped stretches. */
export function compactDiff(d: readonly DiffLine[], context = 2): (DiffLine | null)[] {
  const keep = new Array<boolean>(d.length).fill(false);
  d.forEach((l, i) => {
    if (l.kind === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(d.length - 1, i + context); k++) keep[k] = true;
  });
  const out: (DiffLine | null)[] = [];
  let skipped = false;
  d.forEach((l, i) => {
    if (keep[i]) {
      out.push(l);
      skipped = false;
    } else if (!skipped) {
      out.push(null);
      skipped = true;
    }
  });
  return out;
}

/** The diff a card shows for an edit: from its diff content when it has landed, else from its input. */
export function editDiff(s: ToolState): { path: string; diff: DiffLine[] } | null {
  const d = s.content.find((c) => c.type === 'diff');
  if (d && typeof d.newText === 'string') return { path: d.path ?? '', diff: lineDiff(d.oldText ?? null, d.newText) };
  const raw = s.rawInput;
  const path = String(raw.file_path ?? raw.notebook_path ?? '');
  if (s.tool === 'Edit' && typeof raw.new_string === 'string') {
    return { path, diff: lineDiff(String(raw.old_string ?? ''), raw.new_string) };
  }
  if (s.tool === 'Write' && typeof raw.content === 'string') return { path, diff: lineDiff(null, raw.content) };
  return null;
}

// ------------------------------------------------------------------------------------------- output

/** The first `max` lines of `text`, and how many more there are. */
export function capLines(text: string, max = 20): { shown: string; hidden: number; total: number } {
  const all = text.replace(/\n$/, '').split('\n');
  if (all.length <= max) return { shown: all.join('\n'), hidden: 0, total: all.length };
  return { shown: all.slice(0, max).join('\n'), hidden: all.length - max, total: all.length };
}

/** A path in tool output, as the cards link it: the absolute path (what opens), its line, and how it shows. */
export interface OutputPath {
  path: string;
  line?: number;
  /** the file name (with `:line`), shown first */
  name: string;
  /** the workspace-relative folder, shown after it, dimmed ('' at the root) */
  dir: string;
}

const ESCAPE = /[.*+?^${}()|[\]\\]/g;
const TAIL = /[,.;:!?]+$/;
const TRACEBACK_LINE = /^", line (\d+)/;

/**
 * Tool output cut into text and the paths inside the workspace it names (Glob lists, Grep hits
 * `path:12:…`, tracebacks `File "path", line 12`), so the card shows each one workspace-relative, file name
 * first, and opens it at its line. Paths outside every root stay text. The model's copy is not touched.
 */
export function pathSegments(text: string, roots: readonly string[]): (string | OutputPath)[] {
  const rs = roots.map(norm).filter(Boolean).sort((a, b) => b.length - a.length);
  if (!rs.length || !text) return text ? [text] : [];
  const re = new RegExp(`(?:${rs.map((r) => r.replace(ESCAPE, '\\$&')).join('|')})/[^\\s:"'\`()<>\\[\\]{},;|]+`, 'g');
  const out: (string | OutputPath)[] = [];
  let at = 0;
  for (const m of text.matchAll(re)) {
    const start = m.index ?? 0;
    const before = text[start - 1];
    if (before !== undefined && /[\w./~-]/.test(before)) continue;
    const path = m[0].replace(TAIL, '');
    let end = start + path.length;
    let line: number | undefined;
    const colon = /^:(\d+)(?::\d+)?/.exec(text.slice(end));
    const tb = colon ? null : TRACEBACK_LINE.exec(text.slice(end));
    if (colon) {
      line = Number(colon[1]);
      end += colon[0].length;
    } else if (tb) {
      line = Number(tb[1]);
    }
    if (start > at) out.push(text.slice(at, start));
    const { name, dir } = splitPath(path, roots);
    out.push({ path, ...(line ? { line } : {}), name: line ? `${name}:${line}` : name, dir });
    at = end;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

export function outputText(s: ToolState): string {
  return s.content
    .filter((c) => c.type === 'content' && c.content?.type === 'text')
    .map((c) => c.content?.text ?? '')
    .join('\n');
}

// ------------------------------------------------------------------------------------------- summaries

/** Tool name from `_meta.sidecar.tool`, else guessed from the input's shape (old sidecars, replays). */
export function toolName(s: ToolState): string {
  if (s.tool) return s.tool;
  const r = s.rawInput;
  if ('command' in r) return 'Bash';
  if ('old_string' in r) return 'Edit';
  if ('file_path' in r && 'content' in r) return 'Write';
  if ('file_path' in r) return 'Read';
  if ('todos' in r) return 'TodoWrite';
  if ('subagent_type' in r) return 'Task';
  if ('questions' in r) return 'AskUserQuestion';
  if ('url' in r) return 'WebFetch';
  if ('pattern' in r && ('output_mode' in r || 'glob' in r || 'type' in r)) return 'Grep';
  if ('pattern' in r) return 'Glob';
  return s.title || 'Tool';
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function firstLine(text: string, max = 60): string {
  const first = text.trim().split('\n')[0] ?? '';
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Grep's result counts read from its output: "14 matches in 5 files", "5 files", "no matches". */
export function grepCounts(s: ToolState): string | null {
  const text = outputText(s);
  if (!text) return null;
  if (/^No (files|matches) found/.test(text)) return 'no matches';
  let m = /^Found (\d+) files?/.exec(text);
  if (m) return plural(Number(m[1]), 'file');
  m = /Found (\d+) total occurrences across (\d+) files?/.exec(text);
  if (m) return `${plural(Number(m[1]), 'match', 'matches')} in ${plural(Number(m[2]), 'file')}`;
  const files = new Set<string>();
  let matches = 0;
  for (const line of text.split('\n')) {
    const hit = /^(.+?):(\d+):/.exec(line);
    if (hit) {
      matches++;
      files.add(hit[1] as string);
    }
  }
  if (matches) return `${plural(matches, 'match', 'matches')} in ${plural(files.size, 'file')}`;
  return null;
}

function bashExit(s: ToolState): string | null {
  const md = s.metadata ?? {};
  if (md.timed_out === true) return 'timed out';
  if (md.killed === true) return 'killed';
  if (md.background === true) return 'in background';
  const code = num(md.exit_code);
  if (code !== undefined) return `exit ${code}`;
  const m = /Exit code (\d+)|exited with (?:code )?(\d+)/i.exec(outputText(s));
  if (m) return `exit ${m[1] ?? m[2]}`;
  if (s.status === 'completed') return 'exit 0';
  return null;
}

/** "Todos 2/4 · Writing tests": distinct for each TodoWrite, from what it set. */
function todoSummary(raw: Record<string, unknown>): string {
  const todos = Array.isArray(raw.todos) ? (raw.todos as { content?: string; status?: string; activeForm?: string }[]) : [];
  const done = todos.filter((t) => t.status === 'completed').length;
  const now = todos.find((t) => t.status === 'in_progress');
  const head = `Todos ${done}/${todos.length} done`;
  if (now) return `${head} · ${now.activeForm || now.content || ''}`.trim();
  if (todos.length && done === todos.length) return `${head} · all complete`;
  const next = todos.find((t) => t.status === 'pending');
  return next ? `${head} · next: ${next.content ?? ''}` : head;
}

/** The card's one-line human summary. */
export function toolSummary(s: ToolState, roots: readonly string[]): string {
  const raw = s.rawInput;
  const name = toolName(s);
  const path = (k: string): string => shortPath(String(raw[k] ?? ''), roots);
  const tail = (t: string | null): string => (t ? ` — ${t}` : '');
  switch (name) {
    case 'Read': {
      const off = num(raw.offset);
      const lim = num(raw.limit);
      const range = off || lim ? ` lines ${off ?? 1}–${lim ? (off ?? 1) + lim - 1 : 'end'}` : '';
      return `Read ${path('file_path')}${range}`;
    }
    case 'Edit':
    case 'Write':
    case 'NotebookEdit': {
      const d = editDiff(s);
      const target = name === 'NotebookEdit' ? path('notebook_path') : path('file_path');
      if (!d) return `${name} ${target}`;
      const { added, removed } = diffStats(d.diff);
      return `${name} ${target} +${added} −${removed}`;
    }
    case 'Grep':
      return `Grep "${String(raw.pattern ?? '')}"${raw.path ? ` in ${path('path')}` : ''}${tail(grepCounts(s))}`;
    case 'Glob': {
      const n = num(s.metadata?.count);
      const text = outputText(s);
      const count = n !== undefined ? plural(n, 'file') : /^No files found/.test(text) ? 'no files' : text ? plural(text.split('\n').filter(Boolean).length, 'file') : null;
      return `Glob ${String(raw.pattern ?? '')}${raw.path ? ` in ${path('path')}` : ''}${tail(s.status === 'completed' ? count : null)}`;
    }
    case 'Bash': {
      // The model's description is the title (what it is for); the command follows it.
      const desc = typeof raw.description === 'string' ? firstLine(raw.description) : '';
      const cmd = firstLine(String(raw.command ?? ''), desc ? 40 : 60);
      return `${desc ? `${desc}: ` : 'Bash '}\`${cmd}\`${tail(s.status === 'completed' || s.status === 'failed' ? bashExit(s) : null)}`;
    }
    case 'BashOutput':
      return `Output of ${String(raw.bash_id ?? 'shell')}`;
    case 'KillShell':
      return `Stop ${String(raw.shell_id ?? 'shell')}`;
    case 'WebFetch': {
      let host = String(raw.url ?? '');
      try {
        host = new URL(host).host || host;
      } catch {
        /* keep as typed */
      }
      return `Fetch ${host}`;
    }
    case 'WebSearch':
      return `Search the web for "${String(raw.query ?? '')}"`;
    case 'TodoWrite':
      return todoSummary(raw);
    case 'Task': {
      const calls = num(s.metadata?.tool_calls);
      return `${String(raw.subagent_type ?? 'agent')}: ${String(raw.description ?? 'task')}${tail(calls !== undefined ? plural(calls, 'tool call') : null)}`;
    }
    case 'AskUserQuestion': {
      const qs = Array.isArray(raw.questions) ? (raw.questions as { header?: string; question?: string }[]) : [];
      const first = qs[0];
      return `Question: ${first?.header || first?.question || ''}${qs.length > 1 ? ` (+${qs.length - 1})` : ''}`;
    }
    case 'LSP': {
      const line = num(raw.line);
      return `${String(raw.operation ?? 'LSP')} ${shortPath(String(raw.filePath ?? ''), roots)}${line ? `:${line}` : ''}`;
    }
    case 'ExitPlanMode':
      return 'Plan ready for review';
    case 'Skill':
      return `Skill ${String(raw.skill ?? raw.name ?? '')}`.trim();
    default:
      return s.title || name;
  }
}

/** A failed card whose failure is the user's own answer (rejection or cancel), read from the result text. */
export function userDecisionOf(s: ToolState): ToolState['decision'] {
  if (s.decision) return s.decision;
  if (s.status !== 'failed') return undefined;
  const text = outputText(s);
  if (/^The user cancelled this request/.test(text) || /^Cancelled by the user/.test(text)) return { outcome: 'cancelled' };
  if (!/^The user (rejected|accepted none)/.test(text)) return undefined;
  const said = /The user said: (.*?)(?: Do not retry|$)/s.exec(text);
  return { outcome: 'rejected', feedback: said?.[1]?.trim() || undefined };
}

/** Strip the "[agent: task] " prefix the sidecar puts on a sub-agent's titles (the card is nested instead). */
export function stripAgentLabel(title: string): string {
  return title.replace(/^\[[^\]]+\]\s*/, '');
}

// ------------------------------------------------------------------------------------------- usage
/** A context window's size as the footer shows it: `200k`, `1M`, `1.5M` (never `1000k`). */
export function tokenSize(tokens: number): string {
  if (Math.round(tokens / 1000) >= 1000) return `${Number((tokens / 1_000_000).toFixed(1))}M`;
  if (tokens >= 1000) return `${Math.round(tokens / 1000)}k`;
  return String(tokens);
}
