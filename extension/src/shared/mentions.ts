/**
 * The composer's `@` mentions beyond files and folders (issue 30), for both sides: what the completion
 * list offers, the URIs the prompt carries them as, the `@url <…>` / `@git <sha>` the typed text names,
 * and the text of `@problems` / `@terminal` (composed in the host from the editor's state). The sidecar
 * resolves URLs and git itself (sidecar/server/mentions.py) and redacts the embedded texts
 * (sidecar/server/content.py); docs/extension.md "Mentions" says what the model receives.
 */
import type { ContextItem } from './panelProtocol';

export type MentionName = 'problems' | 'terminal' | 'git' | 'url';

export interface MentionInfo {
  name: MentionName;
  /** One line in the `@` completion list. */
  detail: string;
}

export const MAX_PROBLEMS = 50;
export const MAX_TERMINAL_COMMANDS = 5;
export const MAX_COMMAND_OUTPUT = 4000;
export const MAX_TERMINAL_CHARS = 12000;

export const MENTIONS: readonly MentionInfo[] = [
  { name: 'problems', detail: `errors and warnings in the workspace (at most ${MAX_PROBLEMS}, errors first)` },
  { name: 'terminal', detail: `the active terminal's last ${MAX_TERMINAL_COMMANDS} commands and their output` },
  { name: 'git', detail: 'working tree changes (git diff HEAD); type @git <sha> for a commit' },
  { name: 'url', detail: 'a web page the agent fetches: type @url https://…' },
];

/** Embedded resources the panel composes (the sidecar's content conversion knows the scheme). */
export const PROBLEMS_URI = 'sidecar://problems';
export const TERMINAL_URI = 'sidecar://terminal';
/** Links the sidecar resolves by running git itself. */
export const GIT_DIFF_URI = 'sidecar://git/diff';
export const GIT_COMMIT_PREFIX = 'sidecar://git/commit/';

/** The special mentions whose name starts with what is typed after `@`. */
export function matchingMentions(query: string): MentionInfo[] {
  const q = query.toLowerCase();
  return MENTIONS.filter((m) => m.name.startsWith(q));
}

const URL_MENTION = /(?:^|\s)@url\s+(https?:\/\/[^\s<>"']+)/gi;
const GIT_COMMIT_MENTION = /(?:^|\s)@git\s+([0-9a-f]{4,40})(?![\w-])/gi;

/** The `@url <http(s)://…>` and `@git <sha>` mentions the text names, each once, in order. */
export function textMentions(text: string): ContextItem[] {
  const out: ContextItem[] = [];
  const seen = new Set<string>();
  const add = (item: ContextItem): void => {
    if (seen.has(item.uri)) return;
    seen.add(item.uri);
    out.push(item);
  };
  for (const m of text.matchAll(URL_MENTION)) {
    const url = (m[1] ?? '').replace(/[.,;:!?)\]]+$/, ''); // a sentence's punctuation is not the URL's
    add({ kind: 'url', uri: url, label: url });
  }
  for (const m of text.matchAll(GIT_COMMIT_MENTION)) {
    const sha = (m[1] ?? '').toLowerCase();
    add({ kind: 'git', uri: `${GIT_COMMIT_PREFIX}${sha}`, label: `commit ${sha}` });
  }
  return out;
}

/** Is the item one the text already shows (`@url …`, `@git <sha>`)? Then no chip is drawn beside it. */
export function namedInText(text: string, item: ContextItem): boolean {
  return textMentions(text).some((m) => m.uri === item.uri);
}

// ------------------------------------------------------------------------------------ @problems

export type ProblemSeverity = 'error' | 'warning';

export interface Problem {
  /** workspace-relative */
  path: string;
  /** 1-based */
  line: number;
  column: number;
  severity: ProblemSeverity;
  message: string;
  source?: string;
  code?: string;
}

const MAX_PROBLEM_MESSAGE = 300;

/** The problems as the model reads them: a count line, then errors before warnings, by file and line. */
export function formatProblems(problems: readonly Problem[], max = MAX_PROBLEMS): { text: string; label: string } {
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.length - errors;
  const label = `Problems (${problems.length})`;
  if (!problems.length) return { text: 'No errors or warnings in the workspace.', label };
  const sorted = [...problems].sort(
    (a, b) => Number(a.severity !== 'error') - Number(b.severity !== 'error') || a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column,
  );
  const shown = sorted.slice(0, max);
  const head =
    `${problems.length} ${problems.length === 1 ? 'problem' : 'problems'} in the workspace (${errors} ${errors === 1 ? 'error' : 'errors'}, ` +
    `${warnings} ${warnings === 1 ? 'warning' : 'warnings'})` +
    (shown.length < problems.length ? `; the first ${shown.length}, errors first:` : ':');
  const lines = shown.map((p) => {
    const origin = [p.source, p.code].filter(Boolean).join(' ');
    const message = oneLine(p.message, MAX_PROBLEM_MESSAGE);
    return `${p.path}:${p.line}:${p.column} ${p.severity}${origin ? ` (${origin})` : ''}: ${message}`;
  });
  return { text: [head, ...lines].join('\n'), label };
}

function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s*\n\s*/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** "Problems (N)" back from a replayed `@problems` text (the inverse of `formatProblems`). */
export function problemsLabel(text: string): string {
  const m = /^(\d+) problems? in the workspace/.exec(text);
  return `Problems (${m ? m[1] : '0'})`;
}

// ------------------------------------------------------------------------------------ @terminal

export interface TerminalRun {
  command: string;
  output: string;
  exitCode?: number;
  /** Still running when the mention was made. */
  running?: boolean;
}

/** Escape sequences (colours, cursor moves, VS Code's own OSC 633 marks), then lines overwritten by `\r`. */
export function plainTerminalText(raw: string): string {
  /* eslint-disable no-control-regex -- terminal output's escape sequences are control characters */
  const noEscapes = raw
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b[@-Z\\-_]/g, '')
    .replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, '');
  /* eslint-enable no-control-regex */
  return noEscapes
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => line.slice(line.lastIndexOf('\r') + 1))
    .join('\n');
}

/** The terminal's last runs as the model reads them, bounded: each output's end, the newest runs first kept. */
export function formatTerminal(name: string, runs: readonly TerminalRun[]): { text: string; label: string } {
  const label = `Terminal (${name})`;
  const picked = runs.slice(-MAX_TERMINAL_COMMANDS);
  const parts: string[] = [];
  let total = 0;
  for (let i = picked.length - 1; i >= 0; i--) {
    const run = picked[i];
    if (!run) continue;
    let output = plainTerminalText(run.output).replace(/\s+$/, '');
    if (output.length > MAX_COMMAND_OUTPUT) output = `[… ${output.length - MAX_COMMAND_OUTPUT} characters cut]\n${output.slice(-MAX_COMMAND_OUTPUT)}`;
    const end = run.running ? '(still running)' : run.exitCode !== undefined ? `(exit code ${run.exitCode})` : '(exit code unknown)';
    // Empty: the command printed nothing, or it ended before the extension host's read() began (a fast one).
    const part = [`$ ${run.command}`, output || (run.running ? '' : '(no output captured)'), end].filter(Boolean).join('\n');
    if (total + part.length > MAX_TERMINAL_CHARS && parts.length) break;
    parts.unshift(part);
    total += part.length;
  }
  const n = parts.length;
  const head = `Terminal "${name}": the last ${n === 1 ? 'command' : `${n} commands`}, oldest first`;
  return { text: [head, ...parts].join('\n\n'), label };
}

/** "Terminal (name)" back from a replayed `@terminal` text. */
export function terminalLabel(text: string): string {
  const m = /^Terminal "([^"\n]*)"/.exec(text);
  return `Terminal (${m ? m[1] : '?'})`;
}
