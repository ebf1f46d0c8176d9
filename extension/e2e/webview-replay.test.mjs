// A long session/load replay in the chat webview (issue 18): the panel holds the replayed updates, draws the
// newest turns at once and the older ones above them in idle time. Checked in the webview bundle itself
// (dist/webview.js and media/chat.css in headless Chromium, no editor): the transcript it ends with is the
// one the same updates drawn in order give, DOM for DOM, with live messages that came meanwhile after it;
// the newest turn shows before the oldest is drawn; the view stays at the bottom, or on what the user
// scrolled to while the older turns came in above it.
/* global window, document, requestAnimationFrame */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { extensionDir } from './harness.mjs';

const TURNS = 120;
const WS = '/ws';

/** A replayed session like the sidecar's: prompts with checkpoints, Read/Grep cards, Markdown answers, a thought, a stopped turn, failures. */
function session(turns) {
  const us = [];
  for (let n = 1; n <= turns; n++) {
    const meta = { _meta: { sidecar: { promptId: `prompt_${n}`, userMessageId: `msg_${n}` } } };
    us.push({ sessionUpdate: 'user_message_chunk', messageId: `prompt_${n}`, content: { type: 'text', text: `Step ${n}: read part${n % 7}.py` }, ...meta });
    if (n % 10 === 0) us.push({ sessionUpdate: 'user_message_chunk', messageId: `prompt_${n}`, content: { type: 'resource_link', uri: `file://${WS}/src/a${n}.ts`, name: `src/a${n}.ts` }, ...meta });
    us.push({ sessionUpdate: 'usage_update', used: 1000 + n * 10, size: 200000 });
    if (n % 9 === 0) us.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: `Thinking about **step ${n}**` } });
    const read = `toolu_read_${n}`;
    us.push({ sessionUpdate: 'tool_call', toolCallId: read, title: `Read ${WS}/part${n % 7}.py`, kind: 'read', status: 'pending', rawInput: { file_path: `${WS}/part${n % 7}.py` }, _meta: { sidecar: { tool: 'Read' } } });
    us.push({ sessionUpdate: 'tool_call_update', toolCallId: read, status: 'in_progress' });
    us.push({ sessionUpdate: 'tool_call_update', toolCallId: read, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: `     1\tdef f${n}(xs):\n     2\t    return sum(xs)` } }] });
    if (n % 3 === 0) {
      const grep = `toolu_grep_${n}`;
      us.push({ sessionUpdate: 'tool_call', toolCallId: grep, title: `Grep def f${n}`, kind: 'search', status: 'pending', rawInput: { pattern: `def f${n}`, output_mode: 'content' }, _meta: { sidecar: { tool: 'Grep' } } });
      us.push({ sessionUpdate: 'tool_call_update', toolCallId: grep, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: `part${n % 7}.py:1:def f${n}(xs):` } }] });
    }
    const code = n % 5 === 0 ? `\n\n\`\`\`python\ndef f${n}(xs):\n    return sum(x * ${n} for x in xs)\n\`\`\`\n` : '';
    us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `Turn ${n}: the function **scales** its input.\n\n- called from \`main.py\`` } });
    us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `${code}\nDone with step ${n}.` } });
    if (n % 17 === 0) {
      us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '\n\n_Stopped._' }, _meta: { sidecar: { turnEnd: { stopReason: 'cancelled' } } } });
    } else if (n % 23 === 0) {
      const error = { code: -32050, message: `The model API answered HTTP 529 at step ${n}.`, data: { kind: 'model_unavailable', retryable: true } };
      us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: error.message }, _meta: { sidecar: { turnEnd: { stopReason: 'error', error } } } });
    } else {
      us.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '' }, _meta: { sidecar: { turnEnd: { stopReason: 'end_turn' } } } });
    }
    // a tool call of an earlier turn finishing later (a card is found by its id: no piece may split them)
    if (n === 50) us.push({ sessionUpdate: 'tool_call_update', toolCallId: 'toolu_read_44', status: 'failed' });
  }
  us.push({ sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'compact', description: 'Compact' }] });
  return us;
}

/** What a prompt sent meanwhile looks like to the webview: its echo, its answer, its end. */
const LIVE = [
  { type: 'userPrompt', text: 'A live prompt', context: [], promptId: 'live_1' },
  { type: 'update', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'The **live** answer.' } } },
  { type: 'turnEnd', stopReason: 'end_turn' },
];

let browser;
let dir;
let page;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-webview-'));
  // The element ids main.ts and composer.ts look up (the chat view's markup, chatView.ts, without the CSP).
  const html = `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<link href="${pathToFileURL(path.join(extensionDir, 'media', 'chat.css'))}" rel="stylesheet"></head><body>
<header class="toolbar"><select id="sessions"></select><button id="new-session" class="secondary">New</button></header>
<div class="transcript-wrap"><main id="transcript" aria-live="polite"></main><button id="status" class="status" role="status" hidden></button><button id="new-activity" class="pill" hidden>↓ New activity</button></div>
<section id="plan" class="plan" hidden></section>
<footer class="composer"><div id="menu" class="menu" role="listbox" hidden></div><div id="context" class="context"></div>
<textarea id="prompt" rows="3"></textarea><div class="row"><select id="mode"><option value="default">Ask before edits</option></select>
<span id="config" class="config-picker"></span><button id="mention" class="secondary">@</button><button id="selection" class="secondary">Selection</button>
<span class="grow"></span><span class="usage-wrap"><span id="usage" class="usage"></span><span class="usage-bar"><span class="usage-bar-fill"></span></span></span>
<button id="stop" class="secondary" hidden>Stop</button><button id="send">Send</button></div></footer>
<script>window.posted = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.posted.push(m), getState: () => undefined, setState: () => undefined });</script>
<script src="${pathToFileURL(path.join(extensionDir, 'dist', 'webview.js'))}"></script></body></html>`;
  fs.writeFileSync(path.join(dir, 'chat.html'), html);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage({ viewport: { width: 420, height: 700 } });
  await page.goto(pathToFileURL(path.join(dir, 'chat.html')).href);
  await page.evaluate((ws) => {
    window.postMessage({ type: 'state', sessionId: 's', sessions: [], mode: 'default', busy: false, ready: true, failed: false, pending: 0, roots: [ws], configOptions: [] }, '*');
  }, WS);
});

after(async () => {
  await browser?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Posts `clear` (a replay or not), the updates in batches as the extension host does, `replayDone` for a
 * replay, then `then` (messages that come after); resolves with what was seen, once every turn is drawn.
 */
function draw(updates, { replay, then = [], scrollUp = false }) {
  return page.evaluate(
    async ({ updates, replay, then, scrollUp, turns }) => {
      const t = document.getElementById('transcript');
      const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
      let cleared = false;
      const seen = (e) => {
        if (e.data?.type === 'clear') cleared = true;
      };
      window.addEventListener('message', seen);
      window.postMessage({ type: 'clear', ...(replay ? { replay: true } : {}) }, '*');
      for (let i = 0; i < updates.length; i += 200) window.postMessage({ type: 'batch', messages: updates.slice(i, i + 200).map((update) => ({ type: 'update', update })) }, '*');
      if (replay) window.postMessage({ type: 'replayDone' }, '*');
      if (then.length) window.postMessage({ type: 'batch', messages: then }, '*');
      const markers = t.getElementsByClassName('turn-marker');
      const want = turns + (then.length ? 1 : 0);
      const last = `Done with step ${turns}.`;
      let firstShown = null;
      let lastShownWith = null;
      let pinned = null;
      for (let i = 0; i < 2000 && !(cleared && markers.length >= want); i++) {
        await frame();
        const answers = [...t.querySelectorAll('.msg.agent')].map((a) => a.textContent ?? '');
        if (cleared && lastShownWith === null && answers.some((a) => a.includes(last))) {
          lastShownWith = markers.length;
          firstShown = t.querySelector('.msg.user')?.textContent ?? null;
          if (scrollUp) {
            // The user scrolls up to the first message drawn: it must not move while older turns come in above it.
            await frame();
            const first = t.querySelector('.msg.user');
            first.scrollIntoView({ block: 'start' });
            await frame();
            pinned = { el: first, top: first.getBoundingClientRect().top };
          }
        }
      }
      window.removeEventListener('message', seen);
      for (let i = 0; i < 8; i++) await frame(); // the last Markdown frame and the settling at the bottom
      return {
        html: t.innerHTML,
        markers: markers.length,
        lastShownWith,
        firstShown,
        users: [...t.querySelectorAll('.msg.user > .body')].map((b) => b.textContent),
        offBottom: t.scrollHeight - t.clientHeight - t.scrollTop,
        pinnedMoved: pinned ? pinned.el.getBoundingClientRect().top - pinned.top : null,
        pill: !document.getElementById('new-activity').hidden,
        usage: document.getElementById('usage').dataset.used,
        retries: t.querySelectorAll('.retry-btn').length,
        wait: t.querySelectorAll('.replay-wait').length,
      };
    },
    { updates, replay, then, scrollUp, turns: TURNS },
  );
}

test('a replay drawn newest turns first ends as the replay drawn in order, DOM for DOM, live messages after it', async () => {
  const updates = session(TURNS);
  const inOrder = await draw(updates, { replay: false, then: LIVE });
  const replayed = await draw(updates, { replay: true, then: LIVE });
  assert.equal(inOrder.markers, TURNS + 1);
  assert.equal(replayed.markers, TURNS + 1);
  assert.deepEqual(
    replayed.users,
    [...Array.from({ length: TURNS }, (_, i) => `Step ${i + 1}: read part${(i + 1) % 7}.py`), 'A live prompt'],
    'every prompt once, in order, the live one last',
  );
  assert.equal(replayed.html, inOrder.html, 'the same transcript as the replay drawn in order');
  assert.ok(replayed.lastShownWith < TURNS, `the newest turn shows before the older ones are all drawn (${replayed.lastShownWith} of ${TURNS} then)`);
  assert.notEqual(replayed.firstShown, 'Step 1: read part1.py');
  assert.equal(replayed.usage, String(1000 + TURNS * 10), 'the usage meter shows the last usage');
  assert.equal(replayed.retries, 0, 'Retry is offered for the last failure only (here none: later prompts followed)');
  assert.equal(replayed.wait, 0);
  assert.ok(Math.abs(replayed.offBottom) <= 1, `the view is at the bottom (${replayed.offBottom} px off)`);
  assert.equal(replayed.pill, false);
});

test('scrolled up while the older turns come in: what the user looks at stays in place', async () => {
  const updates = session(TURNS);
  const r = await draw(updates, { replay: true, scrollUp: true });
  assert.equal(r.markers, TURNS);
  assert.notEqual(r.pinnedMoved, null);
  assert.ok(Math.abs(r.pinnedMoved) <= 1, `the message in view moved by ${r.pinnedMoved} px`);
});

