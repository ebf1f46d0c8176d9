// The open chats (src/panel/chats.ts): the side bar's and the editor tabs', each a real ChatView on a
// stand-in webview panel with its own Sessions on a fake agent connection.
import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { type ChatCommands, ChatView } from '../../src/panel/chatView';
import { type Chat, Chats } from '../../src/panel/chats';
import { type Connection, Sessions } from '../../src/panel/sessions';
import { Pending } from '../../src/pending';
import type { FromView, ToView } from '../../src/shared/panelProtocol';
import { resetMock } from '../mocks/vscode';

/** A webview panel as ChatView uses it: what the chat posted (batches unpacked), what the webview sends. */
function fakePanel(): { panel: vscode.WebviewPanel; posted: ToView[]; send: (m: FromView) => void; reveals: boolean[] } {
  const posted: ToView[] = [];
  const reveals: boolean[] = [];
  let listener: (m: FromView) => void = () => undefined;
  const webview = {
    options: {},
    html: '',
    cspSource: 'vscode-resource:',
    asWebviewUri: (u: vscode.Uri) => u,
    onDidReceiveMessage: (l: (m: FromView) => void) => (listener = l),
    postMessage: async (m: ToView) => {
      posted.push(...(m.type === 'batch' ? m.messages : [m]));
      return true;
    },
  };
  const panel = {
    webview,
    visible: true,
    reveal: (_column: unknown, preserveFocus: boolean) => reveals.push(preserveFocus),
    onDidChangeViewState: () => undefined,
    onDidDispose: () => undefined,
  };
  return { panel: panel as unknown as vscode.WebviewPanel, posted, send: (m) => listener(m), reveals };
}

const unused = (): never => {
  throw new Error('not used here');
};
const commands: ChatCommands = {
  mentionFile: unused, addSelection: unused, mention: unused, openDiff: unused, openText: unused,
  openCompare: unused, findFiles: unused, visibilityChanged: () => undefined, showReview: unused,
};

class FakeConnection implements Connection {
  requests: { method: string; params: unknown }[] = [];
  async sendRequest<P, R>(type: { method: string }, params: P): Promise<R> {
    this.requests.push({ method: type.method, params });
    if (type.method === 'session/list') return { sessions: [] } as R;
    return null as R;
  }
  async sendNotification(): Promise<void> {}
}

const flushed = (): Promise<void> => new Promise((r) => setTimeout(r, 30));

let pending: Pending;
let chats: Chats;
let conn: FakeConnection;

/** A chat on its own panel, wired as ctx.ts wires one. */
function open(sessionId: string | null): Chat & ReturnType<typeof fakePanel> {
  const chat = new ChatView(vscode.Uri.file('/ext'), commands);
  const sessions = new Sessions(chat, () => '/ws', 'default');
  chat.sessions = sessions;
  sessions.sessionId = sessionId;
  const entry = { chat, sessions };
  sessions.waiting = () => chats.waitingIn(entry);
  sessions.onSessionChanged = () => chats.showWaiting();
  sessions.shownElsewhere = (id) => chats.focusElsewhere(entry, id);
  const p = fakePanel();
  chat.attachPanel(p.panel);
  p.send({ type: 'ready' });
  return Object.assign(entry, p);
}

const lastWaiting = (posted: ToView[]): number | undefined => posted.filter((m) => m.type === 'state').at(-1)?.pending;

/** A request of `sessionId` that waits for the user until the returned function answers it. */
function ask(sessionId?: string): () => void {
  let answer!: () => void;
  void pending.track(() => new Promise<void>((r) => (answer = r)), sessionId);
  return () => answer();
}

let side: ReturnType<typeof open>;

beforeEach(async () => {
  resetMock();
  pending = new Pending();
  conn = new FakeConnection();
  const sideBar = open('S-side');
  chats = new Chats(sideBar, pending);
  side = sideBar;
  pending.onDidChange(() => chats.showWaiting());
});

describe('what waits, per chat', () => {
  it('is worked out from where each request went, and follows a tab that moves to another session', async () => {
    const tab = open('S-tab');
    chats.addTab(tab);
    ask('S-tab');
    ask('S-side');
    ask('S-nobody'); // a session no chat shows: asked in the side bar
    const done = ask(); // no session at all: the side bar too
    await flushed();
    expect([lastWaiting(tab.posted), lastWaiting(side.posted)]).toEqual([1, 3]);
    // The tab opens another session: its approval now shows in the side bar (chatFor), and so does its count.
    // (Pushed counts were only recomputed when a request came or went: the tab kept saying 1.)
    await tab.sessions.attach(conn);
    await tab.sessions.load('S-other');
    await flushed();
    expect(chats.chatFor('S-tab')).toBe(side.chat);
    expect([lastWaiting(tab.posted), lastWaiting(side.posted)]).toEqual([0, 4]);
    done();
    await flushed();
    expect([lastWaiting(tab.posted), lastWaiting(side.posted)]).toEqual([0, 3]);
    // the tab closes: nothing of it is counted anywhere
    chats.deleteTab(tab);
    ask('S-other');
    await flushed();
    expect(lastWaiting(side.posted)).toBe(4);
  });
});

describe('one session, one chat', () => {
  it('opening a session another chat shows focuses that chat instead of loading it twice', async () => {
    const tab = open('S-tab');
    chats.addTab(tab);
    await tab.sessions.attach(conn);
    conn.requests = [];
    tab.send({ type: 'loadSession', sessionId: 'S-side' });
    await flushed();
    expect(conn.requests.map((r) => r.method)).not.toContain('session/load');
    expect(tab.sessions.sessionId).toBe('S-tab');
    // the tab's picker goes back to its own session; the side bar takes the keyboard
    expect(tab.posted.filter((m) => m.type === 'state').at(-1)).toMatchObject({ sessionId: 'S-tab' });
    expect(side.reveals).toEqual([false]);
    expect(side.posted.some((m) => m.type === 'focusPrompt')).toBe(true);
    // a session no other chat shows loads as before
    tab.send({ type: 'loadSession', sessionId: 'S-free' });
    await flushed();
    expect(conn.requests.filter((r) => r.method === 'session/load').map((r) => (r.params as { sessionId: string }).sessionId)).toEqual(['S-free']);
    expect(chats.showing('S-free')).toBe(tab);
  });
});

describe('messages for every chat', () => {
  it('reach the side bar and each tab (an agent that did not start)', async () => {
    const tab = open(null);
    chats.addTab(tab);
    chats.post({ type: 'error', message: 'The agent failed to start: boom' });
    await flushed();
    for (const c of [side, tab]) expect(c.posted).toContainEqual({ type: 'error', message: 'The agent failed to start: boom' });
  });
});
