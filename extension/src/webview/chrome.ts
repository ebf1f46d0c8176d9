/**
 * The panel around the transcript: the sessions list and status line above it, the plan below it, the
 * permission mode, model picker and context meter in the footer. Filled from the host's `state` message
 * and the panel-state updates (plan, usage, mode).
 */
import type { ModeId, PlanEntry, SessionInfo } from '../shared/acp';
import type { PostToHost, StateMessage } from '../shared/panelProtocol';
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
  private readonly statusEl = byId('status', 'div');
  private readonly usageEl = byId('usage', 'span');
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
    this.statusEl.textContent = !m.ready ? (m.failed ? 'The agent is not running (see the error below).' : 'Starting the agent…') : m.pending > 0 ? `${m.pending} waiting for you` : '';
    document.body.dataset.failed = String(Boolean(m.failed));
    document.body.dataset.ready = String(m.ready);
    document.body.dataset.sessionId = m.sessionId ?? '';
  }

  mode(modeId: string): void {
    this.modeSel.value = modeId;
  }

  plan(entries: PlanEntry[]): void {
    const planEl = this.planEl;
    planEl.hidden = entries.length === 0;
    planEl.textContent = '';
    planEl.appendChild(el('div', 'label', 'Plan'));
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

  clearUsage(): void {
    this.usageEl.textContent = '';
  }
}
