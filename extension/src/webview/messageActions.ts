/**
 * Checkpoints in the chat: each user message the sidecar gave an id (`userMessageId`) gets one small icon
 * button overlaid at its top-right corner (shown on hover or keyboard focus, reachable with Tab, taking no
 * space in the layout). It opens a menu with "Restore code", "Restore conversation", "Restore both"
 * (`_sidecar/sessions/rewind` with its `files` and `conversation` flags), "Compare" (what "Restore code"
 * would change, in VS Code's diff editor: `_sidecar/sessions/compare`) and "Edit & resend" (the message
 * becomes an editable box; sending it rewinds both and sends the new text, so it replaces that turn). The
 * menu is one popover on the document body (transcript messages contain their paint, so a popover inside
 * one would be clipped), placed beside the button, closed by Escape, a click outside, Tab, a choice, or
 * the button scrolling out of view. The rewind request itself runs in the extension host.
 */
import type { ContextItem, PostToHost } from '../shared/panelProtocol';
import { el } from './dom';

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

export const COMPARE_ACTION = {
  label: 'Compare',
  title: 'Show what "Restore code" would change: each file now against the checkpoint before this message (nothing is written)',
};

export const EDIT_ACTION = {
  label: 'Edit & resend',
  title: 'Edit this message and send it again in place of this turn (files and conversation go back to before it)',
};

/** The icon button's accessible name and tooltip. */
export const TOGGLE_LABEL = 'Checkpoint actions';
export const TOGGLE_TITLE = 'Restore code or conversation to before this message, or edit and resend it';

export interface MessageActionsHost {
  post: PostToHost;
  isBusy(): boolean;
  /** Put the text of a rewound message back into the composer (when it is empty). */
  refill(text: string): void;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** A clock with an arrow turning back (the "history" shape), drawn in the button's text colour. */
function checkpointIcon(): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  for (const [k, v] of Object.entries({ viewBox: '0 0 16 16', width: '16', height: '16', 'aria-hidden': 'true', focusable: 'false' })) svg.setAttribute(k, v);
  const path = document.createElementNS(SVG_NS, 'path');
  path.setAttribute('d', 'M2.5 8A5.5 5.5 0 1 1 4.1 11.9M0.9 6.4 2.5 8 4.1 6.4M8 5V8L10 9.5');
  for (const [k, v] of Object.entries({ fill: 'none', stroke: 'currentColor', 'stroke-width': '1.3', 'stroke-linecap': 'round', 'stroke-linejoin': 'round' })) path.setAttribute(k, v);
  svg.appendChild(path);
  return svg;
}

/** The open menu: its element, the button that opened it, and how to take its listeners down. */
interface OpenMenu {
  menu: HTMLElement;
  toggle: HTMLButtonElement;
  dispose(): void;
}

export class MessageActions {
  /** What each user message sent, by its element (for Edit & resend and refilling the composer). */
  private readonly sent = new WeakMap<HTMLElement, { text: string; context: ContextItem[] }>();
  private open: OpenMenu | null = null;

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
    const box = el('div', 'msg-actions');
    const toggle = el('button', 'msg-actions-toggle');
    toggle.type = 'button';
    toggle.disabled = this.host.isBusy();
    toggle.title = TOGGLE_TITLE;
    toggle.setAttribute('aria-label', TOGGLE_LABEL);
    toggle.setAttribute('aria-haspopup', 'menu');
    toggle.setAttribute('aria-expanded', 'false');
    toggle.appendChild(checkpointIcon());
    toggle.addEventListener('click', () => {
      if (this.open?.toggle === toggle) this.close(true);
      else this.openMenu(wrap, messageId, toggle, 0);
    });
    toggle.addEventListener('keydown', (ev) => {
      if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
      ev.preventDefault();
      this.openMenu(wrap, messageId, toggle, ev.key === 'ArrowDown' ? 0 : -1);
    });
    box.appendChild(toggle);
    wrap.appendChild(box);
  }

  /** Busy: the sidecar refuses a rewind while a prompt runs, so the actions are disabled (and the menu shut). */
  setBusy(busy: boolean, root: ParentNode): void {
    if (busy) this.close(false);
    for (const b of Array.from(root.querySelectorAll<HTMLButtonElement>('.msg-actions button'))) b.disabled = busy;
  }

  /** The menu of a message's actions, under its button (above when there is no room below); `focus` picks the item. */
  private openMenu(wrap: HTMLElement, messageId: string, toggle: HTMLButtonElement, focus: number): void {
    this.close(false);
    if (this.host.isBusy()) return;
    const menu = el('div', 'msg-menu');
    menu.setAttribute('role', 'menu');
    menu.setAttribute('aria-label', TOGGLE_LABEL);
    menu.tabIndex = -1;
    const item = (action: string, label: string, title: string, run: () => void): HTMLButtonElement => {
      const b = el('button', 'msg-menu-item', label);
      b.type = 'button';
      b.dataset.action = action;
      b.title = title;
      b.tabIndex = -1;
      b.setAttribute('role', 'menuitem');
      b.addEventListener('click', () => {
        if (this.host.isBusy()) return;
        run();
      });
      // the highlight follows the mouse when it moves (not when the menu opens under a resting pointer)
      b.addEventListener('mousemove', (ev) => {
        if ((ev.movementX || ev.movementY) && document.activeElement !== b) b.focus({ preventScroll: true });
      });
      return b;
    };
    for (const a of ACTIONS) {
      menu.appendChild(
        item(a.action, a.label, a.title, () => {
          if (a.action !== 'conversation') {
            // files are overwritten: asked first, beside the message
            this.close(false);
            this.confirm(wrap, messageId, a.action, toggle);
            return;
          }
          this.close(false);
          this.rewind(wrap, messageId, a.action);
        }),
      );
    }
    // After the restores (the first item stays "Restore code"): what "Restore code" would change.
    menu.appendChild(
      item('compare', COMPARE_ACTION.label, COMPARE_ACTION.title, () => {
        this.close(false);
        this.host.post({ type: 'compare', messageId });
      }),
    );
    const sep = el('div', 'msg-menu-sep');
    sep.setAttribute('role', 'separator');
    menu.appendChild(sep);
    menu.appendChild(
      item('edit', EDIT_ACTION.label, EDIT_ACTION.title, () => {
        this.close(false);
        this.edit(wrap, messageId);
      }),
    );
    const items = Array.from(menu.querySelectorAll<HTMLButtonElement>('.msg-menu-item'));
    menu.addEventListener('keydown', (ev) => {
      const at = items.indexOf(document.activeElement as HTMLButtonElement);
      const move = (i: number): void => items[(i + items.length) % items.length].focus({ preventScroll: true });
      if (ev.key === 'ArrowDown') move(at + 1);
      else if (ev.key === 'ArrowUp') move(at < 0 ? -1 : at - 1);
      else if (ev.key === 'Home') move(0);
      else if (ev.key === 'End') move(-1);
      else if (ev.key === 'Escape') this.close(true);
      else if (ev.key === 'Tab') {
        // back on the button, so Tab / Shift+Tab go on from where the menu was opened
        this.close(true);
        return;
      } else return;
      ev.preventDefault();
      ev.stopPropagation();
    });
    document.body.appendChild(menu);
    place(menu, toggle);
    const outside = (ev: Event): void => {
      const t = ev.target as Node | null;
      if (t && (menu.contains(t) || toggle.contains(t))) return;
      this.close(false);
    };
    const focusOut = (ev: FocusEvent): void => {
      const to = ev.relatedTarget as Node | null;
      if (to && (menu.contains(to) || toggle.contains(to))) return;
      this.close(false);
    };
    const away = (): void => this.close(false);
    // the transcript scrolled (by hand or following the stream): the menu stays by its button while that
    // is in view, and shuts when it leaves
    const scrolled = (): void => {
      const r = toggle.getBoundingClientRect();
      const view = (toggle.closest('main') ?? document.documentElement).getBoundingClientRect();
      if (!toggle.isConnected || r.bottom <= view.top || r.top >= view.bottom) this.close(false);
      else place(menu, toggle);
    };
    document.addEventListener('pointerdown', outside, true);
    document.addEventListener('scroll', scrolled, true);
    window.addEventListener('resize', away);
    window.addEventListener('blur', away);
    menu.addEventListener('focusout', focusOut);
    this.open = {
      menu,
      toggle,
      dispose: () => {
        document.removeEventListener('pointerdown', outside, true);
        document.removeEventListener('scroll', scrolled, true);
        window.removeEventListener('resize', away);
        window.removeEventListener('blur', away);
        menu.removeEventListener('focusout', focusOut);
      },
    };
    toggle.setAttribute('aria-expanded', 'true');
    toggle.parentElement?.classList.add('open');
    items[(focus + items.length) % items.length].focus({ preventScroll: true });
  }

  private rewind(wrap: HTMLElement, messageId: string, action: RewindAction): void {
    // the message leaves the transcript: its text goes back to the composer
    if (action !== 'code') {
      const s = this.sent.get(wrap);
      if (s) this.host.refill(s.text);
    }
    this.host.post({ type: 'rewind', messageId, ...rewindFlags(action) });
  }

  /**
   * "Restore code" and "Restore both" put files back: a line in the message asks first (Enter or the
   * button restores, Escape or Cancel leaves everything as it is), and its outcome shows beside the message.
   */
  private confirm(wrap: HTMLElement, messageId: string, action: RewindAction, toggle: HTMLButtonElement): void {
    wrap.querySelector('.restore-confirm')?.remove();
    const bar = el('div', 'restore-confirm');
    bar.setAttribute('role', 'alertdialog');
    bar.appendChild(
      el(
        'span',
        'restore-confirm-text',
        action === 'code'
          ? 'Put the files back as they were before this message? Changes made to them since are lost.'
          : 'Put the files and the conversation back to before this message? Changes made to the files since are lost.',
      ),
    );
    const ok = el('button', 'confirm-restore', action === 'code' ? 'Restore code' : 'Restore both');
    ok.type = 'button';
    const cancel = el('button', 'secondary cancel-restore', 'Cancel');
    cancel.type = 'button';
    const row = el('div', 'row');
    row.append(ok, cancel);
    bar.appendChild(row);
    const done = (refocus: boolean): void => {
      bar.remove();
      if (refocus && toggle.isConnected) toggle.focus({ preventScroll: true });
    };
    ok.addEventListener('click', () => {
      if (this.host.isBusy()) return;
      done(action === 'code');
      this.rewind(wrap, messageId, action);
    });
    cancel.addEventListener('click', () => done(true));
    bar.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        ev.stopPropagation();
        done(true);
      }
    });
    wrap.appendChild(bar);
    ok.focus({ preventScroll: true });
    bar.scrollIntoView({ block: 'nearest' });
  }

  /** Shuts the open menu; `refocus` puts focus back on its button (Escape, Tab, Restore code). */
  private close(refocus: boolean): void {
    const o = this.open;
    if (!o) return;
    this.open = null;
    o.dispose();
    o.menu.remove();
    o.toggle.setAttribute('aria-expanded', 'false');
    o.toggle.parentElement?.classList.remove('open');
    if (refocus && o.toggle.isConnected) o.toggle.focus({ preventScroll: true });
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

/**
 * Puts the menu (position: fixed) under its button, right edges aligned, inside the window: above the
 * button when it does not fit below, and moved left when the window is narrower than the menu's reach.
 */
function place(menu: HTMLElement, toggle: HTMLElement): void {
  const r = toggle.getBoundingClientRect();
  const w = menu.offsetWidth;
  const h = menu.offsetHeight;
  const margin = 4;
  const below = r.bottom + 2;
  const top = below + h <= window.innerHeight - margin || r.top - 2 - h < margin ? below : r.top - 2 - h;
  const left = Math.max(margin, Math.min(r.right - w, window.innerWidth - margin - w));
  menu.style.top = `${Math.round(top)}px`;
  menu.style.left = `${Math.round(left)}px`;
}
