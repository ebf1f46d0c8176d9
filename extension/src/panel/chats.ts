/**
 * The open chats: the side bar's and each editor tab's ("Open in New Tab"), each a `ChatView` with its
 * `Sessions`. What the sidecar asks goes to the chat showing its session (the side bar's when none does);
 * what waits for the user is counted where it was asked, worked out afresh on every state message; one
 * session shows in one chat at a time (docs/extension.md, "Editor tabs").
 */
import type { Pending } from '../pending';
import type { ToView } from '../shared/panelProtocol';
import type { ChatView } from './chatView';
import type { Sessions } from './sessions';

export interface Chat {
  chat: ChatView;
  sessions: Sessions;
}

export class Chats {
  private readonly tabs = new Set<Chat>();

  constructor(
    readonly sideBar: Chat,
    private readonly pending: Pending,
  ) {}

  /** Every open chat: the side bar's first, then the tabs'. */
  all(): Chat[] {
    return [this.sideBar, ...this.tabs];
  }

  addTab(tab: Chat): void {
    this.tabs.add(tab);
  }

  deleteTab(tab: Chat): void {
    this.tabs.delete(tab);
  }

  /** The chat showing `sessionId`, if any. */
  showing(sessionId: string | null | undefined): Chat | undefined {
    return sessionId ? this.all().find((c) => c.sessions.sessionId === sessionId) : undefined;
  }

  /** Where what `sessionId` asks goes: the chat showing it, else the side bar's. */
  chatFor(sessionId: string | null | undefined): ChatView {
    return (this.showing(sessionId) ?? this.sideBar).chat;
  }

  /**
   * "N waiting for you" in `chat`: what waits in the sessions whose requests go to it (`chatFor`), and in the
   * side bar also what came without a session. Derived from the open requests and the sessions the chats
   * show now, never kept, so it follows a tab that moved to another session or closed.
   */
  waitingIn(chat: Chat): number {
    let n = 0;
    for (const [sessionId, count] of this.pending.bySession()) if (this.chatFor(sessionId) === chat.chat) n += count;
    return n;
  }

  /**
   * Opening `sessionId` in `asking`: when another chat shows it already, that chat takes the focus instead
   * (true), as Claude Code focuses the tab a conversation is open in; two chats on one session would each
   * take its updates and answer its approvals.
   */
  focusElsewhere(asking: Chat, sessionId: string): boolean {
    const other = this.all().find((c) => c !== asking && c.sessions.sessionId === sessionId);
    if (!other) return false;
    other.chat.focusPrompt();
    return true;
  }

  /** Each chat shows what waits in it now (after a request came or went, or a chat changed session). */
  showWaiting(): void {
    for (const c of this.all()) c.sessions.pushState();
  }

  /** A message for every open chat (the agent's state: it did not start, a notice of its own). */
  post(m: ToView): void {
    for (const c of this.all()) c.chat.post(m);
  }
}
