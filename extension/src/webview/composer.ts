/**
 * The composer: the prompt box, its context chips, inline `@` completion of the special mentions
 * (`@problems`, `@terminal`, `@git`, `@url`: shared/mentions.ts) and of workspace files and folders
 * (matched in the extension host over a cached list), the `/` menu fed by `available_commands_update`,
 * pasted images (sent as ACP image blocks), ↑/↓ prompt history and Shift+Tab to cycle the mode.
 */
import type { AvailableCommand as Command } from '../shared/acp';
import { GIT_DIFF_URI, type MentionInfo, matchingMentions, textMentions } from '../shared/mentions';
import type { ContextItem, FileResult, PostToHost } from '../shared/panelProtocol';
import { isModeId } from './chrome';
import { byId, el } from './dom';

interface MenuItem {
  label: string;
  detail: string;
  apply(): void;
}

export interface ComposerHost {
  post: PostToHost;
  isBusy(): boolean;
  onSend(): void;
}

/** The `@query` being typed just before the caret, if any. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const m = /(^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  if (!m) return null;
  return { start: caret - (m[2] ?? '').length - 1, query: m[2] ?? '' };
}

/** The `/name` being typed at the start of the prompt (before any space), if any. */
export function slashAt(text: string, caret: number): string | null {
  const m = /^\/(\S*)$/.exec(text.slice(0, caret));
  return m ? (m[1] ?? '') : null;
}

/** The picked files the text still mentions (`@path` followed by a space, punctuation or the end), once each. */
export function mentionedFiles(text: string, mentions: ReadonlyMap<string, string>): ContextItem[] {
  const out: ContextItem[] = [];
  for (const [path, uri] of mentions) {
    if (hasMention(text, path)) out.push({ kind: 'file', uri, label: path });
  }
  return out;
}

/**
 * What a prompt sends besides its text: the chips (an error chip is never sent), the picked files the text
 * still names, and the `@url …` / `@git <sha>` it types — each once, none both as text and as a chip.
 */
export function promptContext(text: string, chips: readonly ContextItem[], mentions: ReadonlyMap<string, string>): ContextItem[] {
  const out = chips.filter((c) => !c.error);
  for (const item of [...mentionedFiles(text, mentions), ...textMentions(text)]) {
    if (!out.some((c) => c.kind === item.kind && c.uri === item.uri)) out.push(item);
  }
  return out;
}

/** The `@name` typed at `start` (its query `query`) taken out of the text, for a mention that becomes a chip. */
export function withoutMention(text: string, start: number, query: string): { text: string; caret: number } {
  let end = start + 1 + query.length;
  let from = start;
  if (text[end] === ' ' && (from === 0 || text[from - 1] === ' ')) end++; // no double space left behind
  else if (from > 0 && text[from - 1] === ' ' && (end >= text.length || text[end] === '\n')) from--;
  return { text: text.slice(0, from) + text.slice(end), caret: from };
}

/** Does `text` mention `@label` as a word of its own (a file the message names)? */
export function hasMention(text: string, label: string): boolean {
  let i = text.indexOf(`@${label}`);
  while (i >= 0) {
    const before = text[i - 1];
    const after = text[i + label.length + 1];
    if ((before === undefined || /\s/.test(before)) && (after === undefined || /[\s,.;:!?)]/.test(after))) return true;
    i = text.indexOf(`@${label}`, i + 1);
  }
  return false;
}

export class Composer {
  private readonly box = byId('prompt', 'textarea');
  private readonly sendBtn = byId('send', 'button');
  private readonly contextEl = byId('context', 'div');
  private readonly menu = byId('menu', 'div');
  private readonly modeSel = byId('mode', 'select');
  private context: ContextItem[] = [];
  /** Files picked in the `@` completion, by the path the text names (`@path`): sent as links, never as chips too. */
  private readonly mentions = new Map<string, string>();
  private commands: Command[] = [];
  private items: MenuItem[] = [];
  private active = 0;
  private requestId = 0;
  private mention: { start: number; query: string } | null = null;
  private history: string[] = [];
  private historyIndex = -1;
  private enabled = false;

  constructor(private readonly host: ComposerHost) {
    this.sendBtn.addEventListener('click', () => this.send());
    this.box.addEventListener('keydown', (ev) => this.keydown(ev));
    this.box.addEventListener('input', () => this.refreshMenu());
    this.box.addEventListener('click', () => this.refreshMenu());
    // Closed a moment after the box loses focus (a click on a menu item lands first), unless it has it again.
    this.box.addEventListener('blur', () =>
      setTimeout(() => {
        if (document.activeElement !== this.box) this.closeMenu();
      }, 150),
    );
    this.box.addEventListener('paste', (ev) => this.paste(ev));
    document.getElementById('mention')?.addEventListener('click', () => {
      this.insertAtCaret('@');
      this.refreshMenu();
    });
    document.getElementById('selection')?.addEventListener('click', () => host.post({ type: 'addSelection' }));
  }

  setEnabled(on: boolean): void {
    this.enabled = on;
    this.sendBtn.disabled = !on;
  }

  setCommands(commands: Command[]): void {
    this.commands = commands;
  }

  /** The keyboard in the prompt box, the caret at the end of what is typed. */
  focus(): void {
    this.box.focus();
    const n = this.box.value.length;
    this.box.setSelectionRange(n, n);
  }

  menuOpen(): boolean {
    return !this.menu.hidden;
  }

  addContext(item: ContextItem): void {
    // One chip per mention: a second `@problems` refreshes the first (the host read the editor again).
    const same = this.context.findIndex((c) => c.kind === item.kind && c.uri === item.uri && (c.kind === 'problems' || c.kind === 'terminal' || c.kind === 'git'));
    if (same >= 0) this.context.splice(same, 1);
    this.context.push(item);
    this.renderContext();
    this.box.focus();
  }

  // ------------------------------------------------------------------------------------ sending

  private send(): void {
    const text = this.box.value;
    if (this.host.isBusy() || !this.enabled || (!text.trim() && !this.context.some((c) => !c.error))) return;
    this.host.post({ type: 'prompt', text, context: promptContext(text, this.context, this.mentions) });
    if (text.trim()) this.history.push(text);
    this.historyIndex = -1;
    this.box.value = '';
    this.context = [];
    this.mentions.clear();
    this.renderContext();
    this.closeMenu();
    this.host.onSend();
  }

  /** A rewound message's text back in the box, unless the user is already typing something else. */
  refill(text: string): void {
    if (!this.box.value.trim()) this.setText(text);
  }

  /** Put a past prompt back for editing. */
  setText(text: string): void {
    this.box.value = text;
    this.box.focus();
    this.box.setSelectionRange(text.length, text.length);
  }

  private keydown(ev: KeyboardEvent): void {
    if (ev.isComposing) return;
    if (this.menuOpen()) {
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        ev.preventDefault();
        const n = this.items.length;
        this.active = (this.active + (ev.key === 'ArrowDown' ? 1 : n - 1)) % Math.max(1, n);
        this.renderMenu();
        return;
      }
      // Enter on a command typed out in full sends it (the menu would only complete what is there).
      if (ev.key === 'Enter' && !ev.shiftKey && this.menu.dataset.kind === 'commands' && this.commands.some((c) => `/${c.name}` === this.box.value.trim())) {
        ev.preventDefault();
        this.closeMenu();
        this.send();
        return;
      }
      if ((ev.key === 'Enter' || ev.key === 'Tab') && this.items.length) {
        ev.preventDefault();
        this.items[this.active]?.apply();
        return;
      }
      if (ev.key === 'Escape') {
        ev.preventDefault();
        ev.stopPropagation();
        this.closeMenu();
        return;
      }
    }
    if (ev.key === 'Enter' && !ev.shiftKey) {
      ev.preventDefault();
      this.send();
      return;
    }
    if (ev.key === 'Tab' && ev.shiftKey) {
      ev.preventDefault();
      const opts = [...this.modeSel.options].map((o) => o.value);
      const next = opts[(opts.indexOf(this.modeSel.value) + 1) % opts.length] ?? 'default';
      this.modeSel.value = next;
      if (isModeId(next)) this.host.post({ type: 'setMode', modeId: next });
      return;
    }
    // Prompt history: ↑ on the first line, ↓ on the last.
    if (ev.key === 'ArrowUp' && this.history.length && !this.box.value.slice(0, this.box.selectionStart).includes('\n')) {
      if (this.historyIndex === -1 && this.box.value.trim()) return;
      ev.preventDefault();
      this.historyIndex = this.historyIndex === -1 ? this.history.length - 1 : Math.max(0, this.historyIndex - 1);
      this.box.value = this.history[this.historyIndex] ?? '';
      return;
    }
    if (ev.key === 'ArrowDown' && this.historyIndex >= 0 && !this.box.value.slice(this.box.selectionEnd).includes('\n')) {
      ev.preventDefault();
      this.historyIndex++;
      if (this.historyIndex >= this.history.length) {
        this.historyIndex = -1;
        this.box.value = '';
      } else {
        this.box.value = this.history[this.historyIndex] ?? '';
      }
    }
  }

  // ------------------------------------------------------------------------------------ menus

  private refreshMenu(): void {
    const caret = this.box.selectionStart;
    const text = this.box.value;
    const slash = slashAt(text, caret);
    if (slash !== null && this.commands.length) {
      const q = slash.toLowerCase();
      this.items = this.commands
        .filter((c) => c.name.toLowerCase().includes(q))
        .sort((a, b) => Number(!a.name.toLowerCase().startsWith(q)) - Number(!b.name.toLowerCase().startsWith(q)))
        .map((c) => ({
          label: `/${c.name}`,
          detail: c.description + (c.input?.hint ? ` — ${c.input.hint}` : ''),
          apply: () => {
            this.box.value = `/${c.name} ` + text.slice(caret).trimStart();
            const at = c.name.length + 2;
            this.box.setSelectionRange(at, at);
            this.closeMenu();
            this.box.focus();
          },
        }));
      this.menu.dataset.kind = 'commands';
      this.active = 0;
      this.renderMenu();
      return;
    }
    const mention = mentionAt(text, caret);
    if (mention) {
      this.mention = mention;
      this.requestId++;
      this.host.post({ type: 'findFiles', query: mention.query, requestId: this.requestId });
      return;
    }
    this.closeMenu();
  }

  /** The extension's answer to `findFiles`; stale answers are dropped. */
  fileResults(requestId: number, items: FileResult[]): void {
    if (requestId !== this.requestId || !this.mention) return;
    const mention = this.mention;
    // The special mentions come first, when the query is not inside a folder.
    const special = mention.query.includes('/') ? [] : matchingMentions(mention.query).map((m) => this.mentionItem(m, mention));
    this.items = special.concat(items.map((f) => ({
      label: f.path,
      detail: f.isFolder ? 'folder' : '',
      apply: () => {
        const caret = this.box.selectionStart;
        const before = this.box.value.slice(0, mention.start);
        const after = this.box.value.slice(caret);
        const inserted = `@${f.path}${f.isFolder ? '' : ' '}`;
        this.box.value = before + inserted + after;
        const at = before.length + inserted.length;
        this.box.setSelectionRange(at, at);
        this.box.focus();
        if (f.isFolder) {
          this.refreshMenu(); // keep completing inside the folder
        } else {
          // The `@path` in the text is the mention: sent as a link to the file, with no chip beside it.
          if (f.uri) this.mentions.set(f.path, f.uri);
          this.closeMenu();
        }
      },
    })));
    this.menu.dataset.kind = 'files';
    this.active = 0;
    this.renderMenu();
  }

  /**
   * A special mention in the `@` list. `@url` stays text (the URL is typed after it); the others become a
   * chip and leave the text, so nothing is sent twice.
   */
  private mentionItem(m: MentionInfo, mention: { start: number; query: string }): MenuItem {
    return {
      label: `@${m.name}`,
      detail: m.detail,
      apply: () => {
        const caret = this.box.selectionStart;
        const query = this.box.value.slice(mention.start + 1, caret);
        if (m.name === 'url') {
          const before = this.box.value.slice(0, mention.start);
          const inserted = '@url ';
          this.box.value = before + inserted + this.box.value.slice(caret).trimStart();
          const at = before.length + inserted.length;
          this.box.setSelectionRange(at, at);
        } else {
          const cut = withoutMention(this.box.value, mention.start, query);
          this.box.value = cut.text;
          this.box.setSelectionRange(cut.caret, cut.caret);
          if (m.name === 'git') this.addContext({ kind: 'git', uri: GIT_DIFF_URI, label: 'Git changes' });
          else this.host.post({ type: 'addMention', mention: m.name });
        }
        this.closeMenu();
        this.box.focus();
      },
    };
  }

  private renderMenu(): void {
    this.menu.textContent = '';
    if (!this.items.length) {
      this.menu.hidden = true;
      return;
    }
    this.items.slice(0, 50).forEach((item, i) => {
      const row = el('div', `menu-item${i === this.active ? ' active' : ''}`);
      row.setAttribute('role', 'option');
      row.appendChild(el('span', 'menu-label', item.label));
      if (item.detail) row.appendChild(el('span', 'menu-detail', item.detail));
      row.addEventListener('mousedown', (ev) => {
        ev.preventDefault();
        item.apply();
      });
      this.menu.appendChild(row);
      if (i === this.active) row.scrollIntoView({ block: 'nearest' });
    });
    this.menu.hidden = false;
  }

  private closeMenu(): void {
    this.menu.hidden = true;
    this.items = [];
    this.mention = null;
  }

  private insertAtCaret(s: string): void {
    const { selectionStart: a, selectionEnd: b, value } = this.box;
    const pad = a > 0 && !/\s/.test(value[a - 1] ?? ' ') ? ' ' : '';
    this.box.value = value.slice(0, a) + pad + s + value.slice(b);
    const at = a + pad.length + s.length;
    this.box.focus();
    this.box.setSelectionRange(at, at);
  }

  // ------------------------------------------------------------------------------------ context

  private paste(ev: ClipboardEvent): void {
    const files = [...(ev.clipboardData?.items ?? [])].filter((i) => i.kind === 'file' && i.type.startsWith('image/'));
    if (!files.length) return;
    ev.preventDefault();
    for (const item of files) {
      const file = item.getAsFile();
      if (!file) continue;
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        const data = url.slice(url.indexOf(',') + 1);
        const n = this.context.filter((c) => c.kind === 'image').length + 1;
        this.addContext({ kind: 'image', uri: '', label: `image ${n}`, data, mimeType: file.type || 'image/png' });
      };
      reader.readAsDataURL(file);
    }
  }

  private renderContext(): void {
    this.contextEl.textContent = '';
    this.context.forEach((c, i) => {
      const chip = el('span', `chip ${c.kind}${c.error ? ' chip-error' : ''}`);
      if (c.error) chip.title = c.error;
      if (c.kind === 'image' && c.data) {
        const img = el('img', 'chip-thumb');
        img.src = `data:${c.mimeType};base64,${c.data}`;
        img.alt = c.label;
        chip.appendChild(img);
      }
      chip.appendChild(el('span', '', c.error ? `${c.label}: ${c.error}` : c.kind === 'file' ? `@${c.label}` : c.label));
      const x = el('button', 'chip-remove', '×');
      x.title = 'Remove';
      x.addEventListener('click', () => {
        this.context.splice(i, 1);
        this.renderContext();
      });
      chip.appendChild(x);
      this.contextEl.appendChild(chip);
    });
  }
}
