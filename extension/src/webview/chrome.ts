/**
 * The panel around the transcript: the sessions list and status line above it, the plan below it, the
 * permission mode, model picker and context meter in the footer. Filled from the host's `state` message
 * and the panel-state updates (plan, usage, mode).
 */
import type { ModeId, PlanEntry, SessionInfo } from '../shared/acp';
import type { PostToHost, StateMessage } from '../shared/panelProtocol';
import { sessionSpendText, type SpendTotal } from '../shared/spend';
import { pickerSelects, renderPicker } from './configPicker';
import { byId, el } from './dom';
import { tokenSize } from './summary';

const numbers = new Intl.NumberFormat();

const MODES: ReadonlySet<string> = new Set<ModeId>(['default', 'acceptEdits', 'plan', 'bypassPermissions']);

/** The mode select's values are the four modes of the page. */
export function isModeId(v: string): v is ModeId {
  return MODES.has(v);
}

function sessionLabel(s: SessionInfo): string {
  const when = s.updatedAt ? ` · ${s.updatedAt.replace('T', ' ').slice(0, 16)}` : '';
  return `${s.title || s.sessionId.slice(0, 8)}${when}`;
}

export class Chrome {
  readonly modeSel = byId('mode', 'select');
  private readonly configEl = byId('config', 'span');
  private readonly sessionsSel = byId('sessions', 'select');
  private readonly statusEl = byId('status', 'button');
  private readonly usageEl = byId('usage', 'span');
  private readonly costEl = byId('session-cost', 'span');
  private readonly planEl = byId('plan', 'section');

  constructor(private readonly post: PostToHost) {
    this.modeSel.addEventListener('change', () => {
      const modeId = this.modeSel.value;
      if (isModeId(modeId)) post({ type: 'setMode', modeId });
    });
    this.sessionsSel.addEventListener('change', () => {
      if (this.sessionsSel.value) post({ type: 'loadSession', sessionId: this.sessionsSel.value });
    });
    byId('new-session', 'button').addEventListener('click', () => post({ type: 'newSession' }));
    // "N waiting for you" takes the user to the first card that waits.
    this.statusEl.addEventListener('click', () => {
      const card = document.querySelector<HTMLElement>('.tool-card.awaiting');
      if (!card) return;
      card.scrollIntoView({ block: 'center' });
      card.querySelector<HTMLButtonElement>('.approval button')?.focus({ preventScroll: true });
    });
  }

  /** The host's state: sessions, mode, model picker, status line. */
  state(m: StateMessage): void {
    const sel = this.sessionsSel;
    sel.textContent = '';
    const current = el('option', '', m.sessionId ? 'Current session' : 'No session yet');
    current.value = '';
    sel.appendChild(current);
    for (const s of m.sessions) {
      const o = el('option', '', sessionLabel(s));
      o.value = s.sessionId;
      sel.appendChild(o);
    }
    sel.value = m.sessionId && m.sessions.some((s) => s.sessionId === m.sessionId) ? m.sessionId : '';
    this.modeSel.value = m.mode;
    renderPicker(this.configEl, pickerSelects(m.configOptions), (configId, value) => this.post({ type: 'setConfigOption', configId, value }));
    // Over the top of the transcript, out of flow: it comes and goes without moving the transcript.
    this.statusEl.textContent = !m.ready ? (m.failed ? 'The agent is not running (see the error below).' : 'Starting the agent…') : m.pending > 0 ? `${m.pending} waiting for you` : '';
    this.statusEl.hidden = !this.statusEl.textContent;
    this.statusEl.dataset.waiting = String(m.ready && m.pending > 0);
    document.body.dataset.failed = String(Boolean(m.failed));
    document.body.dataset.ready = String(m.ready);
    document.body.dataset.sessionId = m.sessionId ?? '';
  }

  mode(modeId: string): void {
    this.modeSel.value = modeId;
  }

  private planEntries: PlanEntry[] = [];
  private planCollapsed = false;
  /** Folded by a new turn, not by the user: the plan unfolds when the agent updates it again. */
  private planAutoFolded = false;

  /**
   * The plan under the transcript: a header ("Plan 2/4 · the step in progress") that collapses and expands
   * it, then the entries. It is the current turn's: a plan whose steps are all done leaves when its turn
   * ends, and an unfinished one folds to its header when the user starts another turn.
   */
  plan(entries: PlanEntry[]): void {
    this.planEntries = entries;
    if (this.planAutoFolded) this.planCollapsed = this.planAutoFolded = false;
    this.drawPlan();
  }

  /** The turn ended (live, or the last one of a replay): a finished plan is not pinned any longer. */
  turnEnded(): void {
    if (this.planEntries.length && this.planEntries.every((e) => e.status === 'completed')) this.plan([]);
  }

  /** The user started a turn: what is left of an earlier plan folds to its header. */
  promptStarted(): void {
    this.turnEnded();
    if (this.planEntries.length && !this.planCollapsed) {
      this.planCollapsed = this.planAutoFolded = true;
      this.drawPlan();
    }
  }

  private drawPlan(): void {
    const planEl = this.planEl;
    const entries = this.planEntries;
    planEl.hidden = entries.length === 0;
    planEl.textContent = '';
    if (!entries.length) {
      this.planCollapsed = this.planAutoFolded = false;
      return;
    }
    const done = entries.filter((e) => e.status === 'completed').length;
    const current = entries.find((e) => e.status === 'in_progress') ?? entries.find((e) => e.status !== 'completed');
    const head = el('button', 'plan-head');
    head.type = 'button';
    head.setAttribute('aria-expanded', String(!this.planCollapsed));
    head.title = this.planCollapsed ? 'Show the plan' : 'Fold the plan';
    head.appendChild(el('span', 'plan-twisty', this.planCollapsed ? '▸' : '▾'));
    head.appendChild(el('span', 'label', 'Plan'));
    head.appendChild(el('span', 'plan-count', `${done}/${entries.length}`));
    if (this.planCollapsed && current) head.appendChild(el('span', 'plan-current', current.content));
    head.addEventListener('click', () => {
      this.planCollapsed = !this.planCollapsed;
      this.planAutoFolded = false;
      this.drawPlan();
    });
    planEl.appendChild(head);
    planEl.dataset.collapsed = String(this.planCollapsed);
    if (this.planCollapsed) return;
    const ul = el('ul');
    for (const e of entries) {
      const li = el('li', `plan-entry ${e.status}`);
      const box = el('input');
      box.type = 'checkbox';
      box.disabled = true;
      box.checked = e.status === 'completed';
      li.appendChild(box);
      li.appendChild(el('span', '', e.content));
      ul.appendChild(li);
    }
    planEl.appendChild(ul);
  }

  usage(used: number | undefined, size: number | undefined): void {
    const usageEl = this.usageEl;
    if (typeof used !== 'number') return;
    const total = typeof size === 'number' ? size : undefined;
    usageEl.textContent = total ? `${Math.round((used / total) * 100)}% of ${tokenSize(total)}` : `${numbers.format(used)} tokens`;
    usageEl.title = total ? `Context: ${numbers.format(used)} of ${numbers.format(total)} tokens used` : `Context: ${numbers.format(used)} tokens`;
    usageEl.dataset.used = String(used);
    const bar = usageEl.parentElement?.querySelector<HTMLElement>('.usage-bar-fill');
    if (bar && total) bar.style.width = `${Math.min(100, (used / total) * 100)}%`;
  }

  /** The session's cost so far (tokens for a model without a price), beside the context meter. */
  sessionSpend(total: SpendTotal | undefined): void {
    const shown = sessionSpendText(total);
    if (!shown) return;
    this.costEl.textContent = shown.text;
    this.costEl.title = shown.title;
  }

  clearUsage(): void {
    this.usageEl.textContent = '';
    this.costEl.textContent = '';
    this.costEl.title = '';
  }
}
