/**
 * The editor's state behind `@problems` and `@terminal` (issue 30): the workspace's diagnostics, and each
 * terminal's recent commands with their output, read through shell integration from the moment a command
 * starts. Formatting and bounds are in shared/mentions.ts; the sidecar redacts what it receives.
 */
import * as vscode from 'vscode';
import { formatProblems, formatTerminal, MAX_COMMAND_OUTPUT, MAX_TERMINAL_COMMANDS, type Problem, PROBLEMS_URI, TERMINAL_URI, type TerminalRun } from './shared/mentions';
import type { ContextItem } from './shared/panelProtocol';
import { insideRoots } from './shared/paths';

/** The errors and warnings the editor knows of, in files of the workspace (or any file when it has none). */
export function problemsItem(): ContextItem {
  const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const problems: Problem[] = [];
  for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
    if (uri.scheme !== 'file') continue;
    if (roots.length && !insideRoots(uri.fsPath, roots)) continue;
    for (const d of diagnostics) {
      if (d.severity !== vscode.DiagnosticSeverity.Error && d.severity !== vscode.DiagnosticSeverity.Warning) continue;
      const code = typeof d.code === 'object' ? String(d.code.value) : d.code === undefined ? undefined : String(d.code);
      problems.push({
        path: vscode.workspace.asRelativePath(uri, false),
        line: d.range.start.line + 1,
        column: d.range.start.character + 1,
        severity: d.severity === vscode.DiagnosticSeverity.Error ? 'error' : 'warning',
        message: d.message,
        ...(d.source ? { source: d.source } : {}),
        ...(code ? { code } : {}),
      });
    }
  }
  const { text, label } = formatProblems(problems);
  return { kind: 'problems', uri: PROBLEMS_URI, label, text };
}

/** How much raw output is kept per command before formatting (escape sequences take room). */
const RAW_OUTPUT = 4 * MAX_COMMAND_OUTPUT;

/**
 * The last `bound` characters of a stream, appended to without copying what came before: the chunks are
 * kept in a list and the oldest dropped once the newer ones hold `bound`; they are joined only when read.
 * (`(output + chunk).slice(-bound)` copied the whole 16 KB per chunk of a command's output.)
 */
export class TailText {
  private chunks: string[] = [];
  /** the first chunk still kept */
  private head = 0;
  /** the characters of the chunks kept */
  private kept = 0;

  constructor(private readonly bound: number) {}

  append(chunk: string): void {
    if (!chunk) return;
    if (chunk.length >= this.bound) {
      this.chunks = [chunk.slice(-this.bound)];
      this.head = 0;
      this.kept = this.bound;
      return;
    }
    this.chunks.push(chunk);
    this.kept += chunk.length;
    for (let first = this.chunks[this.head] ?? ''; this.kept - first.length >= this.bound; first = this.chunks[this.head] ?? '') {
      this.kept -= first.length;
      this.head++;
    }
    // the dropped chunks' slots go once they are most of the list (amortised: each slot is moved once)
    if (this.head > 32 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** How many characters are held: under twice `bound` (the chunks after the oldest hold fewer than `bound`). */
  get retained(): number {
    return this.kept;
  }

  toString(): string {
    const text = this.chunks.slice(this.head).join('');
    return text.length > this.bound ? text.slice(-this.bound) : text;
  }
}

/** A command as recorded: its output as read so far. */
interface Recorded {
  command: string;
  output: TailText;
  exitCode?: number;
  running: boolean;
}

/** Each open terminal's last commands, recorded as shell integration reports them. */
export class TerminalLog implements vscode.Disposable {
  private readonly runs = new Map<vscode.Terminal, Recorded[]>();
  private readonly byExecution = new WeakMap<vscode.TerminalShellExecution, Recorded>();
  private readonly disposables: vscode.Disposable[];

  constructor() {
    this.disposables = [
      vscode.window.onDidStartTerminalShellExecution((e) => void this.record(e.terminal, e.execution)),
      vscode.window.onDidEndTerminalShellExecution((e) => {
        const run = this.byExecution.get(e.execution);
        if (!run) return;
        run.running = false;
        if (e.exitCode !== undefined) run.exitCode = e.exitCode;
      }),
      vscode.window.onDidCloseTerminal((t) => this.runs.delete(t)),
    ];
  }

  private async record(terminal: vscode.Terminal, execution: vscode.TerminalShellExecution): Promise<void> {
    const run: Recorded = { command: execution.commandLine.value, output: new TailText(RAW_OUTPUT), running: true };
    this.byExecution.set(execution, run);
    const list = this.runs.get(terminal) ?? [];
    list.push(run);
    if (list.length > MAX_TERMINAL_COMMANDS) list.splice(0, list.length - MAX_TERMINAL_COMMANDS);
    this.runs.set(terminal, list);
    try {
      // read() must start with the command, or the first output is gone.
      for await (const chunk of execution.read()) run.output.append(chunk);
    } catch {
      // a terminal closed while it ran: what was read stays
    }
  }

  /** `@terminal`: the active terminal's last commands, or a chip saying why there are none. */
  item(): ContextItem {
    const terminal = vscode.window.activeTerminal;
    const base = { kind: 'terminal' as const, uri: TERMINAL_URI };
    if (!terminal) return { ...base, label: 'Terminal', error: 'no terminal is open; run the command in a terminal first.' };
    const runs = this.runs.get(terminal) ?? [];
    if (!runs.length) {
      const error = terminal.shellIntegration
        ? `no command has run in "${terminal.name}" since Sidecar started; run it again.`
        : `shell integration is not active in "${terminal.name}", so its output cannot be read. Use bash, zsh, fish or PowerShell with terminal.integrated.shellIntegration.enabled on, then run the command again.`;
      return { ...base, label: `Terminal (${terminal.name})`, error };
    }
    const read: TerminalRun[] = runs.map((r) => ({ command: r.command, output: r.output.toString(), running: r.running, ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}) }));
    const { text, label } = formatTerminal(terminal.name, read);
    return { ...base, label, text };
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.runs.clear();
  }
}
