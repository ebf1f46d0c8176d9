/**
 * Checkpoints in the chat: under each user message the sidecar gave an id (`userMessageId`), the actions
 * "Restore code", "Restore conversation", "Restore both" (`_sidecar/sessions/rewind` with its `files` and
 * `conversation` flags) and "Edit & resend" (the message becomes an editable box; sending it rewinds both
 * and sends the new text, so it replaces that turn). The rewind request itself runs in the extension host.
 */
import type { ContextItem } from './main';

export type RewindAction = 'code' | 'conversation' | 'both';

/** The flags `_sidecar/sessions/rewind` takes for each action. */
export function rewindFlags(action: RewindAction): { files: boolean; conversation: boolean } {
  return { files: action !== 'conversation', conversation: action !== 'code' };
}

export const ACTIONS: { action: RewindAction; label: string; title: string }[] = [
  { action: 'code', label: 'Restore code', title: 'Put the files this turn and the later ones changed back as they were before this message' },
  { action: 'conversation', label: 'Restore conversation', title: 'Remove this message and everything after it from the conversation; files stay as they are' },
  { action: 'both', label: 'Restore both', title: 'Restore the files and the conversation to just before this message' },
];

export interface MessageActionsHost {
  post(message: unknown): void;
  isBusy(): boolean;
  /** Put the text of a rewound message back into the composer (when it is empty). */
  refill(text: string): void;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export class MessageActions {
  /** What each user message sent, by its element (for Edit & resend and refilling the composer). */
  private readonly sent = new WeakMap<HTMLElement, { text: string; context: ContextItem[] }>();

  constructor(private readonly host: MessageActionsHost) {}

  remember(wrap: HTMLElement, text: string, context: ContextItem[]): void {
    this.sent.set(wrap, { text, context });
  }

  /** What a user message sent (Retry sends it again). */
  sentOf(wrap: HTMLElement): { text: string; context: ContextItem[] } | undefined {
    return this.sent.get(wrap);
  }

  /** The message got its id from the sidecar: it can now be rewound to. */
  attach(wrap: HTMLElement, messageId: string): void {
    wrap.dataset.messageId = messageId;
    wrap.querySelector('.msg-actions')?.remove();
    const row = el('div', 'msg-actions');
    for (const a of ACTIONS) {
      const b = el('button', 'link-button', a.label);
      b.disabled = this.host.isBusy();
      b.dataset.action = a.action;
      b.title = a.title;
      b.addEventListener('click', () => {
        if (this.host.isBusy()) return;
        if (a.action !== 'code') {
          const s = this.sent.get(wrap);
          if (s) this.host.refill(s.text);
        }
        this.host.post({ type: 'rewind', messageId, ...rewindFlags(a.action) });
      });
      row.appendChild(b);
    }
    const edit = el('button', 'link-button', 'Edit & resend');
    edit.dataset.action = 'edit';
    edit.disabled = this.host.isBusy();
    edit.title = 'Edit this message and send it again in place of this turn (files and conversation go back to before it)';
    edit.addEventListener('click', () => this.edit(wrap, messageId));
    row.appendChild(edit);
    wrap.appendChild(row);
  }

  /** Busy: the sidecar refuses a rewind while a prompt runs, so the actions are disabled. */
  setBusy(busy: boolean, root: ParentNode): void {
    for (const b of Array.from(root.querySelectorAll<HTMLButtonElement>('.msg-actions button'))) b.disabled = busy;
  }

  private edit(wrap: HTMLElement, messageId: string): void {
    if (this.host.isBusy() || wrap.querySelector('.edit-box')) return;
    const s = this.sent.get(wrap) ?? { text: wrap.querySelector('.body')?.textContent ?? '', context: [] };
    const form = el('div', 'edit-form');
    const box = el('textarea', 'edit-box') as HTMLTextAreaElement;
    box.value = s.text;
    box.rows = Math.min(8, Math.max(2, s.text.split('\n').length));
    box.setAttribute('aria-label', 'Edited message');
    const row = el('div', 'row');
    const send = el('button', 'edit-send', 'Resend');
    send.title = 'Go back to before this message (files and conversation) and send the edited text';
    const cancel = el('button', 'secondary edit-cancel', 'Cancel');
    row.append(send, cancel);
    form.append(box, row);
    wrap.classList.add('editing');
    wrap.appendChild(form);
    box.focus();
    const close = (): void => {
      form.remove();
      wrap.classList.remove('editing');
    };
    const submit = (): void => {
      const text = box.value;
      if (this.host.isBusy() || (!text.trim() && s.context.length === 0)) return;
      close();
      this.host.post({ type: 'editResend', messageId, text, context: s.context });
    };
    send.addEventListener('click', submit);
    cancel.addEventListener('click', close);
    box.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        submit();
      } else if (ev.key === 'Escape') {
        ev.preventDefault();
        ev.stopPropagation();
        close();
      }
    });
  }
}

/**
 * The conversation went back to before a message: that message and everything after it leave the
 * transcript (the elements are siblings in the transcript). Returns how many elements were removed.
 */
export function truncateTranscript(transcript: HTMLElement, messageId: string): number {
  const start = Array.from(transcript.children).find((c) => (c as HTMLElement).dataset?.messageId === messageId);
  if (!start) return 0;
  let n = 0;
  let node: Element | null = start;
  while (node) {
    const next: Element | null = node.nextElementSibling;
    node.remove();
    n++;
    node = next;
  }
  return n;
}
