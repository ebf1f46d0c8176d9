// A long session/load replay in the chat webview (issue 18): the panel holds the replayed updates, draws the
// newest turns at once and the older ones above them in idle time. Checked in the webview bundle itself
// (dist/webview.js and media/chat.css in headless Chromium, no editor): the transcript it ends with is the
// one the same updates drawn in order give, DOM for DOM, with live messages that came meanwhile after it;
// the newest turn shows before the oldest is drawn; the view stays at the bottom, or on what the user
// scrolled to while the older turns came in above it; wheeling up a freshly opened 300-turn session moves
// what is in view by the wheel's distance, nothing more, while estimated heights turn real above it.
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
<span class="grow"></span><span id="session-cost" class="session-cost"></span><span class="usage-wrap"><span id="usage" class="usage"></span><span class="usage-bar"><span class="usage-bar-fill"></span></span></span>
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

test('a scroll the browser makes down, short of the bottom (anchoring as a card comes in), keeps following', async () => {
  const r = await page.evaluate(async (updates) => {
    const t = document.getElementById('transcript');
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    window.postMessage({ type: 'clear' }, '*');
    window.postMessage({ type: 'batch', messages: updates.map((update) => ({ type: 'update', update })) }, '*');
    while (t.getElementsByClassName('turn-marker').length < 5) await frame();
    for (let i = 0; i < 8; i++) await frame();
    const before = t.scrollHeight - t.clientHeight - t.scrollTop;
    // Content grows under the view and the browser moves the position down a little, by itself (as scroll
    // anchoring does when a card takes its height): no user input, not to the bottom.
    const card = document.createElement('div');
    card.style.height = '300px';
    t.appendChild(card);
    t.scrollTop += 7;
    for (let i = 0; i < 4; i++) await frame();
    const offAfterAnchor = t.scrollHeight - t.clientHeight - t.scrollTop;
    window.postMessage({ type: 'update', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'More after the card.' } } }, '*');
    for (let i = 0; i < 6; i++) await frame();
    return { before, offAfterAnchor, off: t.scrollHeight - t.clientHeight - t.scrollTop, pill: !document.getElementById('new-activity').hidden, following: document.body.dataset.following };
  }, session(5));
  assert.ok(Math.abs(r.before) <= 1, `at the bottom to begin with (${r.before} px off)`);
  assert.ok(Math.abs(r.offAfterAnchor) <= 1, `back at the bottom after the browser's scroll (${r.offAfterAnchor} px off)`);
  assert.ok(Math.abs(r.off) <= 1 && !r.pill && r.following === 'true', `still following: ${JSON.stringify(r)}`);
});

test('wheeling up a freshly opened 300-turn session: a message in view moves by the wheel\'s distance, no jumps', async () => {
  // Narrow, as a side bar: a message laid out for the first time is many times its estimated height (2em).
  await page.setViewportSize({ width: 200, height: 700 });
  const updates = session(300);
  await page.evaluate((updates) => {
    window.postMessage({ type: 'clear', replay: true }, '*');
    for (let i = 0; i < updates.length; i += 200) window.postMessage({ type: 'batch', messages: updates.slice(i, i + 200).map((update) => ({ type: 'update', update })) }, '*');
    window.postMessage({ type: 'replayDone' }, '*');
  }, updates);
  await page.locator('.msg.agent', { hasText: 'Done with step 300.' }).waitFor();
  const box = await page.locator('#transcript').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const WHEEL = 120;
  const steps = [];
  for (let i = 0; i < 40; i++) {
    // The anchor: the first element wholly in view; its position over the next frames, from before the wheel.
    const start = await page.evaluate(() => {
      const t = document.getElementById('transcript');
      const top = t.getBoundingClientRect().top;
      const anchor = [...t.children].find((k) => k.getBoundingClientRect().top >= top);
      window.anchorTrace = { anchor, from: anchor.getBoundingClientRect().top, tops: [] };
      const record = () => {
        window.anchorTrace.tops.push(anchor.getBoundingClientRect().top - window.anchorTrace.from);
        if (window.anchorTrace.tops.length < 8) requestAnimationFrame(record);
      };
      requestAnimationFrame(record);
      return { scrollTop: t.scrollTop, height: t.scrollHeight };
    });
    if (start.scrollTop < 2 * WHEEL) break;
    await page.mouse.wheel(0, -WHEEL);
    await page.waitForFunction(() => window.anchorTrace.tops.length >= 8);
    const tops = await page.evaluate(() => window.anchorTrace.tops.map(Math.round));
    steps.push({ height: start.height, tops });
  }
  assert.ok(steps.length >= 20, `wheeled ${steps.length} times`);
  const grown = steps.at(-1).height - steps[0].height;
  assert.ok(grown > 1000, `estimated heights turned real above the view meanwhile (the transcript grew by ${grown} px)`);
  // A loaded machine may deliver one wheel's scroll over two frames; a jump is a position past the wheel's.
  const uneven = steps.filter((s) => Math.abs(s.tops.at(-1) - WHEEL) > 2 || s.tops.some((d) => d < -2 || d > WHEEL + 2));
  assert.deepEqual(uneven, [], `the anchor ends ${WHEEL} px lower after each wheel, never beyond it on the way`);
});
