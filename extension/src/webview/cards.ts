/**
 * Tool cards: a one-line summary (file name first, workspace-relative), an expanded view with the inputs as
 * fields, Edit/Write as an inline mini-diff, output capped with "Show all" / "Open in editor", sub-agent
 * calls nested under their Task card, and the approval buttons while the call waits for the user.
 */
import type { PermissionOption, PermissionToolCall, ToolCallUpdate } from '../shared/acp';
import type { PostToHost } from '../shared/panelProtocol';
import { el } from './dom';
import { highlight, langOfPath } from './markdown';
import {
  capLines,
  compactDiff,
  type DiffLine,
  editDiff,
  editOutsideRoots,
  type OutputPath,
  outputText,
  pathSegments,
  splitPath,
  stripAgentLabel,
  type ToolContentItem,
  type ToolState,
  toolName,
  toolSummary,
  userDecisionOf,
} from './summary';

export interface CardHost {
  roots(): string[];
  post: PostToHost;
  /** a card was added or grew */
  changed(): void;
  /** where top-level cards go */
  container(): HTMLElement;
  /** the streaming message is over when a card appears */
  breakStream(): void;
}

const OUTPUT_LINES = 20;
const DIFF_LINES = 40;

const STATUS_LABEL: Record<string, string> = { pending: 'pending', in_progress: 'running', completed: 'done', failed: 'failed' };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function button(label: string, cls: string, onClick: () => void, title?: string): HTMLButtonElement {
  const b = el('button', cls, label);
  b.type = 'button';
  if (title) b.title = title;
  b.addEventListener('click', (ev) => {
    ev.preventDefault();
    ev.stopPropagation();
    onClick();
  });
  return b;
}

interface Card {
  state: ToolState;
  el: HTMLDetailsElement;
  summary: HTMLElement;
  status: HTMLElement;
  /** Compare / Restore to the state before this call, once the sidecar says it is a restore point. */
  restore: HTMLElement;
  /** "outside the workspace" on an Edit/Write of a file outside every root (shown collapsed too). */
  outside: HTMLElement;
  approval: HTMLElement;
  decision: HTMLElement;
  body: HTMLElement;
  children: HTMLElement;
  showAll: boolean;
  /** A proposed edit of this call is open for review in the editor. */
  reviewing: boolean;
}

export class Cards {
  private readonly cards = new Map<string, Card>();

  constructor(private readonly host: CardHost) {}

  clear(): void {
    this.cards.clear();
  }

  has(id: string): boolean {
    return this.cards.has(id);
  }

  element(id: string): HTMLElement | undefined {
    return this.cards.get(id)?.el;
  }

  /** A `tool_call` or `tool_call_update`. */
  update(u: ToolCallUpdate): void {
    const id = String(u.toolCallId ?? '');
    const meta = u._meta?.sidecar ?? {};
    let card = this.cards.get(id);
    if (!card) {
      card = this.create(id, typeof meta.parentToolCallId === 'string' ? meta.parentToolCallId : undefined);
    }
    const s = card.state;
    if (typeof meta.tool === 'string') s.tool = meta.tool;
    if (typeof u.title === 'string') s.title = u.title;
    if (typeof u.kind === 'string') s.kind = u.kind;
    if (typeof u.status === 'string') s.status = u.status;
    if (isRecord(u.rawInput)) s.rawInput = u.rawInput;
    if (Array.isArray(u.content)) {
      // Streamed progress replaces the shown output; the final update carries the whole result.
      s.content = u.content;
    }
    if (isRecord(meta.metadata)) s.metadata = meta.metadata;
    const answer = meta.answer;
    if (isRecord(answer) && typeof answer.name === 'string' && answer.name && String(answer.kind).startsWith('allow')) {
      s.chosen = answer.name;
      // open, as the card was when the user answered it (a replayed one is drawn closed)
      card.el.open = true;
    }
    this.render(card);
    if (s.parentId) {
      const parent = this.cards.get(s.parentId);
      if (parent) this.renderSummary(parent);
    }
    this.host.changed();
  }

  private create(id: string, parentId: string | undefined): Card {
    this.host.breakStream();
    const details = el('details', 'tool-card');
    details.dataset.toolCallId = id;
    const summary = el('summary');
    const text = el('span', 'summary-text');
    const status = el('span', 'tool-status');
    const restore = el('span', 'restore-point');
    restore.hidden = true;
    const outside = el('span', 'outside-badge', 'outside the workspace');
    outside.hidden = true;
    summary.append(el('span', 'dot'), text, outside, status, restore);
    const approval = el('div', 'approval');
    approval.hidden = true;
    const decision = el('div', 'decision');
    decision.hidden = true;
    const body = el('div', 'card-body');
    const children = el('div', 'children');
    details.append(summary, approval, decision, body, children);
    const card: Card = {
      state: { id, title: '', kind: 'other', status: 'pending', rawInput: {}, content: [], parentId },
      el: details,
      summary: text,
      status,
      restore,
      outside,
      approval,
      decision,
      body,
      children,
      showAll: false,
      reviewing: false,
    };
    const parent = parentId ? this.cards.get(parentId) : undefined;
    if (parent) {
      details.classList.add('nested');
      parent.children.appendChild(details);
      parent.el.classList.add('has-children');
    } else {
      this.host.container().appendChild(details);
    }
    details.addEventListener('toggle', () => {
      if (details.open) this.renderBody(card);
    });
    this.cards.set(id, card);
    return card;
  }

  /** The user's decision (from the extension, which answered the approval or review). */
  decided(id: string, outcome: 'rejected' | 'cancelled', feedback?: string): void {
    const card = this.cards.get(id);
    if (!card) return;
    card.state.decision = { outcome, feedback };
    this.render(card);
  }

  // ------------------------------------------------------------------------------------ approvals

  offer(key: string, toolCall: PermissionToolCall, options: PermissionOption[]): void {
    const id = String(toolCall.toolCallId ?? '');
    let card = this.cards.get(id);
    if (!card) {
      card = this.create(id, undefined);
      card.state.title = String(toolCall.title ?? 'Tool call');
      if (isRecord(toolCall.rawInput)) card.state.rawInput = toolCall.rawInput;
      this.render(card);
    }
    const box = card.approval;
    box.textContent = '';
    box.hidden = false;
    box.dataset.key = key;
    card.el.classList.add('awaiting');
    box.appendChild(el('div', 'approval-title', 'Waiting for your approval'));
    const exact = this.exactly(card.state, toolCall);
    if (exact) box.appendChild(exact);
    const buttons = el('div', 'approval-buttons');
    const answer = (optionId: string, feedback?: string): void => {
      for (const b of box.querySelectorAll('button')) b.disabled = true;
      this.host.post({ type: 'approve', key, optionId, feedback });
    };
    // One primary button: the first "allow" (Allow once); "Always allow <rule>" and the rejections are secondary.
    const primary = options.find((o) => o.kind === 'allow_once') ?? options.find((o) => o.kind.startsWith('allow'));
    for (const o of options) {
      const label = o.kind === 'allow_once' && o.optionId === 'allow_once' ? 'Allow' : o.name;
      const cls = o === primary ? 'approve-btn allow' : o.kind.startsWith('allow') ? 'approve-btn allow secondary' : 'approve-btn reject secondary';
      const b = button(label, cls, () => answer(o.optionId));
      b.dataset.optionId = o.optionId;
      b.dataset.kind = o.kind;
      buttons.appendChild(b);
    }
    const reject = options.find((o) => o.kind === 'reject_once');
    if (reject) {
      const noteBtn = button('Reject with a note…', 'approve-btn note secondary', () => {
        noteBtn.hidden = true;
        const form = el('div', 'note-form');
        const input = el('textarea', 'note-input');
        input.rows = 2;
        input.placeholder = 'Tell the agent what to do instead (Enter sends)';
        const send = button('Reject and send note', 'approve-btn reject', () => answer(reject.optionId, input.value.trim() || undefined));
        input.addEventListener('keydown', (ev) => {
          if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
            ev.preventDefault();
            send.click();
          }
        });
        form.append(input, send);
        box.appendChild(form);
        input.focus();
      });
      buttons.appendChild(noteBtn);
    }
    box.appendChild(buttons);
    // Open the card and every card it is nested in, so the buttons are visible.
    for (let e: HTMLElement | null = card.el; e; e = e.parentElement?.closest('details.tool-card') ?? null) (e as HTMLDetailsElement).open = true;
    this.renderBody(card);
    this.host.changed();
  }

  /** What will run, exactly: the whole command, or the diff of the edit. */
  private exactly(s: ToolState, toolCall: PermissionToolCall): HTMLElement | null {
    const raw = isRecord(toolCall.rawInput) ? toolCall.rawInput : s.rawInput;
    if (typeof raw.command === 'string') {
      const pre = el('pre', 'exact-command');
      const code = el('code', 'hljs');
      code.innerHTML = highlight(raw.command, 'bash');
      pre.appendChild(code);
      return pre;
    }
    const content: ToolContentItem[] = Array.isArray(toolCall.content) ? toolCall.content : [];
    const d = content.find((c) => c.type === 'diff');
    if (d && typeof d.newText === 'string') {
      return this.diffView({ ...s, content: [d] }, true);
    }
    if (typeof raw.url === 'string') return el('pre', 'exact-command', raw.url);
    return null;
  }

  approvalDone(key: string, toolCallId: string, label: string, outcome: 'allowed' | 'rejected' | 'cancelled', feedback?: string): void {
    const card = this.cards.get(toolCallId);
    if (!card || card.approval.dataset.key !== key) return;
    card.approval.hidden = true;
    card.approval.textContent = '';
    card.el.classList.remove('awaiting');
    if (outcome === 'rejected' || outcome === 'cancelled') {
      card.state.decision = { outcome, feedback };
    } else if (label) {
      card.state.chosen = label;
    }
    this.render(card);
    this.host.changed();
  }

  /** The call's proposed edit waits for the user's review in a diff editor, or no longer does. */
  reviewing(toolCallId: string, waiting: boolean): void {
    const card = this.cards.get(toolCallId);
    if (!card || card.reviewing === waiting) return;
    card.reviewing = waiting;
    card.el.classList.toggle('awaiting-review', waiting);
    card.el.querySelector(':scope > .review-wait')?.remove();
    if (waiting) {
      const box = el('div', 'review-wait');
      box.appendChild(el('span', 'review-wait-text', 'Waiting for your review'));
      box.append(' — ');
      box.appendChild(button('Open diff', 'link-btn open-review', () => this.host.post({ type: 'showReview', toolCallId })));
      card.summary.parentElement?.after(box);
      // open, as for an approval, so the line and its link show
      for (let e: HTMLElement | null = card.el; e; e = e.parentElement?.closest('details.tool-card') ?? null) if (e instanceof HTMLDetailsElement) e.open = true;
    }
    this.render(card);
    this.host.changed();
  }

  focus(toolCallId: string): void {
    const card = this.cards.get(toolCallId);
    if (!card) return;
    for (let e: HTMLElement | null = card.el; e; e = e.parentElement?.closest('details.tool-card') ?? null) (e as HTMLDetailsElement).open = true;
    card.el.scrollIntoView({ block: 'center' });
    card.el.classList.add('flash');
    setTimeout(() => card.el.classList.remove('flash'), 1200);
    (card.approval.querySelector('button') as HTMLButtonElement | null)?.focus();
  }

  // ------------------------------------------------------------------------------------ rendering

  private render(card: Card): void {
    this.renderSummary(card);
    const s = card.state;
    const decision = userDecisionOf(s);
    card.el.dataset.status = s.status;
    card.el.dataset.tool = toolName(s);
    if (decision) {
      card.el.dataset.decision = decision.outcome;
      card.status.textContent = decision.outcome === 'rejected' ? 'rejected by you' : 'cancelled';
      card.decision.hidden = false;
      card.decision.dataset.outcome = decision.outcome;
      card.decision.textContent =
        decision.outcome === 'rejected' ? `You rejected this${decision.feedback ? ` — your note: “${decision.feedback}”` : '.'}` : 'Cancelled before it ran.';
    } else {
      delete card.el.dataset.decision;
      card.status.textContent = card.reviewing ? 'waiting for your review' : (STATUS_LABEL[s.status] ?? s.status);
      card.decision.hidden = !s.chosen;
      if (s.chosen) {
        card.decision.dataset.outcome = 'allowed';
        card.decision.textContent = `You chose: ${s.chosen}`;
      }
    }
    this.renderRestorePoint(card, !decision && s.metadata?.restore_point === true);
    if (card.el.open) this.renderBody(card);
  }

  /**
   * A writing call the sidecar took a checkpoint after (`metadata.restore_point`): "Compare" shows what
   * restoring the files to before it would change, "Restore" asks first, then puts them back (the
   * conversation stays). On its own line under the summary, so a narrow panel keeps the title readable.
   */
  private renderRestorePoint(card: Card, offered: boolean): void {
    const box = card.restore;
    if (!offered) {
      box.hidden = true;
      delete card.el.dataset.restorePoint;
      return;
    }
    if (!box.hidden) return; // drawn already (and maybe asking): later updates leave it as it is
    box.hidden = false;
    card.el.dataset.restorePoint = 'true';
    const id = card.state.id;
    const offer = (): void => {
      box.textContent = '';
      box.append(
        button('Compare', 'link-button compare-tool', () => this.host.post({ type: 'compare', toolCallId: id }), 'Show what restoring the files to before this call would change (nothing is written)'),
        button('Restore', 'link-button restore-tool', ask, 'Put the files back as they were before this call; the conversation stays'),
      );
    };
    const ask = (): void => {
      box.textContent = '';
      const ok = button('Restore', 'confirm-restore-tool', () => {
        offer();
        this.host.post({ type: 'restoreToolCall', toolCallId: id });
      });
      const cancel = button('Cancel', 'secondary cancel-restore-tool', () => {
        offer();
        (box.querySelector('.restore-tool') as HTMLButtonElement | null)?.focus();
      });
      box.append(el('span', 'restore-point-ask', 'Put the files back as they were before this call? Changes made since are lost.'), ok, cancel);
      ok.focus();
      this.host.changed();
    };
    offer();
  }

  private renderSummary(card: Card): void {
    const s = card.state;
    let text = toolSummary(s, this.host.roots());
    if (text === s.title || !text) text = stripAgentLabel(s.title) || text;
    const kids = card.children.childElementCount;
    if (toolName(s) === 'Task' && kids && s.status !== 'completed') text += ` — ${kids} tool call${kids === 1 ? '' : 's'} so far`;
    card.summary.textContent = text;
    card.summary.title = s.title;
    const outside = editOutsideRoots(s, this.host.roots());
    card.outside.hidden = !outside;
    card.outside.title = outside ? `${outside} is outside the workspace folders` : '';
    if (outside) card.el.dataset.outside = 'true';
    else delete card.el.dataset.outside;
  }

  private renderBody(card: Card): void {
    const s = card.state;
    const body = card.body;
    body.textContent = '';
    const tool = toolName(s);
    // While the approval is open it shows the command or the diff exactly: the body does not repeat it.
    const asking = card.el.classList.contains('awaiting');
    body.appendChild(this.fields(s, tool, asking));
    const diff = asking && !card.approval.hidden && card.approval.querySelector('.mini-diff') ? null : this.diffView(s, false);
    if (diff) body.appendChild(diff);
    // TodoWrite's result repeats the list its fields show: the list is shown once.
    if (!userDecisionOf(s) && tool !== 'TodoWrite') {
      const out = this.output(card, tool);
      if (out) body.appendChild(out);
    }
  }

  private pathLink(p: string, line?: number): HTMLElement {
    const { name, dir } = splitPath(p, this.host.roots());
    const a = el('a', 'location');
    a.href = '#';
    a.title = p;
    a.appendChild(el('span', 'loc-name', line ? `${name}:${line}` : name));
    if (dir) a.appendChild(el('span', 'loc-dir', ` ${dir}`));
    a.addEventListener('click', (ev) => {
      ev.preventDefault();
      this.host.post({ type: 'openLocation', path: p, line });
    });
    return a;
  }

  /** A path in the output: file name (and line) first, the folder dimmed; opens the file at the line. */
  private outputLink(p: OutputPath): HTMLElement {
    const a = el('a', 'location out-path');
    a.href = '#';
    a.title = p.line ? `${p.path}:${p.line}` : p.path;
    a.appendChild(el('span', 'loc-name', p.name));
    if (p.dir) a.appendChild(el('span', 'loc-dir', ` ${p.dir}`));
    a.addEventListener('click', (ev) => {
      ev.preventDefault();
      ev.stopPropagation();
      this.host.post({ type: 'openLocation', path: p.path, ...(p.line ? { line: p.line } : {}) });
    });
    return a;
  }

  /** The inputs as label/value rows (never raw JSON for known tools). */
  private fields(s: ToolState, tool: string, asking = false): HTMLElement {
    const box = el('div', 'fields');
    const raw = s.rawInput;
    const row = (label: string, value: HTMLElement | string): void => {
      const r = el('div', 'field');
      r.appendChild(el('span', 'field-label', label));
      const v = typeof value === 'string' ? el('span', 'field-value', value) : value;
      v.classList.add('field-value');
      r.appendChild(v);
      box.appendChild(r);
    };
    const code = (text: string, lang?: string): HTMLElement => {
      const pre = el('pre', 'field-code');
      const c = el('code', 'hljs');
      c.innerHTML = highlight(text, lang);
      pre.appendChild(c);
      return pre;
    };
    const skip = new Set<string>();
    switch (tool) {
      case 'Bash':
        if (!asking) row('Command', code(String(raw.command ?? ''), 'bash'));
        // the description is the card's title
        skip.add('command').add('description');
        break;
      case 'Edit':
      case 'Write':
      case 'Read':
        if (typeof raw.file_path === 'string') row('File', this.pathLink(raw.file_path, typeof raw.offset === 'number' ? raw.offset : undefined));
        skip.add('file_path').add('old_string').add('new_string').add('content');
        break;
      case 'NotebookEdit':
        if (typeof raw.notebook_path === 'string') row('Notebook', this.pathLink(raw.notebook_path));
        skip.add('notebook_path');
        break;
      case 'Task':
        row('Agent', String(raw.subagent_type ?? ''));
        row('Task', String(raw.description ?? ''));
        row('Prompt', el('div', 'field-text', String(raw.prompt ?? '')));
        skip.add('subagent_type').add('description').add('prompt');
        break;
      case 'TodoWrite': {
        const ul = el('ul', 'todo-list');
        for (const t of (raw.todos as { content?: string; status?: string }[] | undefined) ?? []) {
          const li = el('li', `todo ${t.status ?? ''}`, `${t.status === 'completed' ? '✓' : t.status === 'in_progress' ? '▸' : '○'} ${t.content ?? ''}`);
          ul.appendChild(li);
        }
        box.appendChild(ul);
        return box;
      }
      case 'AskUserQuestion': {
        for (const q of (raw.questions as { question?: string; options?: { label?: string }[] }[] | undefined) ?? []) {
          row('Question', `${q.question ?? ''} (${(q.options ?? []).map((o) => o.label).join(' / ')})`);
        }
        return box;
      }
      default:
        break;
    }
    for (const [k, v] of Object.entries(raw)) {
      if (skip.has(k) || v === undefined || v === null || v === '') continue;
      if (typeof v === 'string' && (k.endsWith('path') || k === 'filePath')) row(k, this.pathLink(v));
      else if (typeof v === 'string') row(k, v.includes('\n') ? code(v) : v);
      else if (typeof v === 'number' || typeof v === 'boolean') row(k, String(v));
      else row(k, code(JSON.stringify(v, null, 2), 'json'));
    }
    return box;
  }

  private diffView(s: ToolState, forApproval: boolean): HTMLElement | null {
    const d = editDiff(s);
    if (!d) return null;
    const wrap = el('div', 'mini-diff');
    const lines = compactDiff(d.diff, 2);
    const cardState = this.cards.get(s.id);
    const all = forApproval || cardState?.showAll;
    const shown = all ? lines : lines.slice(0, DIFF_LINES);
    const lang = langOfPath(d.path);
    const pre = el('div', 'diff-lines');
    for (const l of shown) pre.appendChild(this.diffLine(l, lang));
    wrap.appendChild(pre);
    const actions = el('div', 'card-actions');
    if (!all && lines.length > DIFF_LINES) {
      actions.appendChild(button(`Show all (${lines.length - DIFF_LINES} more lines)`, 'link-btn', () => {
        if (cardState) {
          cardState.showAll = true;
          this.renderBody(cardState);
        }
      }));
    }
    const content = s.content.find((c) => c.type === 'diff');
    const raw = s.rawInput;
    const oldText = content ? (content.oldText ?? '') : typeof raw.old_string === 'string' ? raw.old_string : '';
    const newText = content ? (content.newText ?? '') : String(raw.new_string ?? raw.content ?? '');
    actions.appendChild(button('Open diff', 'link-btn open-diff', () => this.host.post({ type: 'openDiff', path: d.path, oldText, newText })));
    wrap.appendChild(actions);
    return wrap;
  }

  private diffLine(l: DiffLine | null, lang: string | undefined): HTMLElement {
    if (!l) return el('div', 'diff-line skip', '⋯');
    const row = el('div', `diff-line ${l.kind === '+' ? 'add' : l.kind === '-' ? 'del' : 'ctx'}`);
    row.appendChild(el('span', 'diff-no', String(l.kind === '-' ? (l.oldNo ?? '') : (l.newNo ?? ''))));
    row.appendChild(el('span', 'diff-sign', l.kind === ' ' ? ' ' : l.kind === '-' ? '−' : '+'));
    const code = el('span', 'diff-text');
    code.innerHTML = highlight(l.text, lang);
    row.appendChild(code);
    return row;
  }

  private output(card: Card, tool: string): HTMLElement | null {
    const s = card.state;
    const text = outputText(s);
    if (!text) return null;
    const wrap = el('div', 'output');
    const cap = capLines(text, OUTPUT_LINES);
    const pre = el('pre', 'text');
    for (const seg of pathSegments(card.showAll ? text : cap.shown, this.host.roots())) {
      pre.append(typeof seg === 'string' ? seg : this.outputLink(seg));
    }
    wrap.appendChild(pre);
    const actions = el('div', 'card-actions');
    if (cap.hidden > 0 && !card.showAll) {
      actions.appendChild(button(`Show all (${cap.hidden} more lines)`, 'link-btn show-all', () => {
        card.showAll = true;
        this.renderBody(card);
        this.host.changed();
      }));
    } else if (cap.hidden > 0) {
      // and the way back: the first lines again, the card's top in view
      actions.appendChild(button('Show less', 'link-btn show-less', () => {
        card.showAll = false;
        this.renderBody(card);
        card.el.scrollIntoView({ block: 'nearest' });
      }));
    }
    if (cap.total > 3) {
      actions.appendChild(button('Open in editor', 'link-btn open-output', () => this.host.post({ type: 'openText', text, title: `${tool} output` })));
    }
    if (actions.childElementCount) wrap.appendChild(actions);
    return wrap;
  }
}
