// End-to-end in a real VS Code (code-server 4.100.3) in headless Chromium, the extension installed from
// its .vsix, the real sidecar on the scripted model. One user's session, step by step; each step leaves
// a screenshot in artifacts/e2e/. Run with `npm run test:e2e` from the repository root.
/* global atob, ClipboardEvent, DataTransfer, File, document, getComputedStyle, requestAnimationFrame, window -- used inside page.evaluate, in the browser */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, pickQuickInput, runCommand, stepper } from './harness.mjs';

const h = new Harness();
const step = stepper(h);
const ws = h.workspace;
const notes = path.join(ws, 'notes.txt');
const original = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const oldBlock = Array.from({ length: 14 }, (_, i) => `line ${i + 2}`).join('\n');
const newBlock = oldBlock.replace('line 2\n', 'line 2 (changed by hunk one)\n').replace('line 15', 'line 15 (changed by hunk two)');
const expected = original.replace('line 2\n', 'line 2 (changed by hunk one)\n');
const marker = path.join(ws, 'approved.txt');
const pricing = path.join(ws, 'pricing.py');
const pricingText = 'def price(amount, discount):\n    # apply the discount\n    return amount - discount\n\n\ndef discount_for(user):\n    return 0\n';
const created = path.join(ws, 'created.txt');
// A 2x2 red PNG, as a screenshot tool would put it on the clipboard.
const pixelPng = 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg==';
const longStream = 'Reading slowly:\n\n' + Array.from({ length: 120 }, (_, i) => `- point ${i + 1}`).join('\n');

// The model's side of the conversation, one entry per Messages API request.
const turns = [
  // 1. a streamed answer
  { content: [{ type: 'text', text: 'Hello from the **scripted** model. I can read, edit and run things here.' }], text_chunk: 6, chunk_delay: 0.02 },
  // 2. an edit in two hunks: Read first (read-before-edit), then Edit, then a closing line
  { content: [{ type: 'tool_use', id: 'toolu_read1', name: 'Read', input: { file_path: notes } }] },
  { content: [{ type: 'tool_use', id: 'toolu_edit1', name: 'Edit', input: { file_path: notes, old_string: oldBlock, new_string: newBlock } }] },
  { content: [{ type: 'text', text: 'The edit was reviewed.' }] },
  // 3. a command that needs approval
  { content: [{ type: 'tool_use', id: 'toolu_bash1', name: 'Bash', input: { command: 'touch approved.txt', description: 'Create a marker file' } }] },
  { content: [{ type: 'text', text: 'Command finished.' }] },
  // 4. a question
  {
    content: [
      {
        type: 'tool_use',
        id: 'toolu_ask1',
        name: 'AskUserQuestion',
        input: {
          questions: [
            {
              question: 'Which color should the button be?',
              header: 'Color',
              multiSelect: false,
              options: [
                { label: 'Red', description: 'Warm and loud' },
                { label: 'Blue', description: 'Calm and cool' },
              ],
            },
          ],
        },
      },
    ],
  },
  { content: [{ type: 'text', text: 'Blue it is.' }] },
  // 5. a long answer the user stops
  { content: [{ type: 'text', text: 'Counting slowly: ' + Array.from({ length: 200 }, (_, i) => String(i + 1)).join(' ') }], text_chunk: 4, chunk_delay: 0.15 },
  // 6. a question the user walks away from: Stop closes the QuickPick
  {
    content: [
      {
        type: 'tool_use',
        id: 'toolu_ask2',
        name: 'AskUserQuestion',
        input: { questions: [{ question: 'Deploy now?', header: 'Deploy', multiSelect: false, options: [{ label: 'Yes', description: '' }, { label: 'No', description: '' }] }] },
      },
    ],
  },
  // 7. a command the user rejects with a note
  { content: [{ type: 'tool_use', id: 'toolu_bash_rm', name: 'Bash', input: { command: 'rm -rf build', description: 'Remove the build folder' } }] },
  { content: [{ type: 'text', text: 'Understood, I left it.' }] },
  // 8. tool cards: Read + Grep, an Edit (acceptEdits mode), 500 lines of output, a sub-agent, rendered Markdown
  {
    content: [
      { type: 'tool_use', id: 'toolu_read_p', name: 'Read', input: { file_path: pricing } },
      { type: 'tool_use', id: 'toolu_grep', name: 'Grep', input: { pattern: 'discount', output_mode: 'content', '-n': true } },
    ],
  },
  { content: [{ type: 'tool_use', id: 'toolu_edit_p', name: 'Edit', input: { file_path: pricing, old_string: '    return amount - discount', new_string: '    return max(0, amount - discount)' } }] },
  { content: [{ type: 'tool_use', id: 'toolu_seq', name: 'Bash', input: { command: 'seq 1 500', description: 'Print 500 lines' } }] },
  { content: [{ type: 'tool_use', id: 'toolu_task', name: 'Task', input: { description: 'Find alpha', prompt: 'Read notes.txt and report its first line', subagent_type: 'Explore' } }] },
  { content: [{ type: 'tool_use', id: 'toolu_sub_read', name: 'Read', input: { file_path: notes, limit: 3 } }] },
  { content: [{ type: 'text', text: 'The first line is "line 1".' }] },
  {
    content: [
      {
        type: 'text',
        text: '# Done\n\nThe price can no longer go negative:\n\n```python\ndef price(amount, discount):\n    return max(0, amount - discount)  # a long comment that must scroll sideways, not wrap mid-identifier\n```\n\n| file | change |\n|---|---|\n| pricing.py | clamp at zero |\n',
      },
    ],
  },
  // 9. a slow stream the user scrolls up in
  { content: [{ type: 'text', text: longStream }], text_chunk: 20, chunk_delay: 0.15 },
  // 10. a slow answer that ends while the panel is hidden
  { content: [{ type: 'text', text: 'Working in the background… ' + 'done.'.repeat(1) }], text_chunk: 3, chunk_delay: 0.3 },
  // 11. checkpoints: two turns that edit, then Restore code on the first; Edit & resend on the second
  { content: [{ type: 'tool_use', id: 'toolu_cp_read', name: 'Read', input: { file_path: notes } }] },
  { content: [{ type: 'tool_use', id: 'toolu_cp_edit1', name: 'Edit', input: { file_path: notes, old_string: 'line 1\n', new_string: 'line 1 (first edit)\n' } }] },
  { content: [{ type: 'text', text: 'First edit done.' }] },
  {
    content: [
      { type: 'tool_use', id: 'toolu_cp_edit2', name: 'Edit', input: { file_path: notes, old_string: 'line 3\n', new_string: 'line 3 (second edit)\n' } },
      { type: 'tool_use', id: 'toolu_cp_write', name: 'Write', input: { file_path: created, content: 'made by the second turn\n' } },
    ],
  },
  { content: [{ type: 'text', text: 'Second edit done.' }] },
  { content: [{ type: 'text', text: 'Goodbye instead.' }] },
  // 12. a pasted image
  { content: [{ type: 'text', text: 'A single pixel.' }] },
  // 13. a question while the panel is hidden
  {
    content: [
      { type: 'text', text: 'Let me ask you something. ' },
      { type: 'tool_use', id: 'toolu_ask_away', name: 'AskUserQuestion', input: { questions: [{ question: 'Ship it today?', header: 'Ship', multiSelect: false, options: [{ label: 'Today', description: '' }, { label: 'Tomorrow', description: '' }] }] } },
    ],
    text_chunk: 3,
    chunk_delay: 0.25,
  },
  { content: [{ type: 'text', text: 'Tomorrow then.' }], text_chunk: 3, chunk_delay: 0.2 },
  // 14. an answer from the model picked in the footer
  { content: [{ type: 'text', text: 'Opus 4.5 answering.' }] },
];

let page;
let chat;

async function sendPrompt(text) {
  const box = chat.locator('#prompt');
  await box.fill(text);
  await chat.locator('#send').click();
}

async function turnsFinished() {
  return chat.locator('.turn-marker').count();
}

async function waitTurnEnd(n, timeout = 60000) {
  await chat.locator('.turn-marker').nth(n - 1).waitFor({ state: 'attached', timeout });
  return chat.locator('.turn-marker').nth(n - 1).getAttribute('data-stop-reason');
}

before(async () => {
  fs.writeFileSync(notes, original);
  fs.writeFileSync(pricing, pricingText);
  ({ page, chat } = await h.startWorkbench(turns));
});


after(async () => {
  await h.close();
});

step('the chat panel streams the answer to a prompt as Markdown', async () => {
  await h.screenshot('panel-ready');
  await sendPrompt('Say hello');
  const msg = chat.locator('.msg.agent').last();
  await msg.locator('strong', { hasText: 'scripted' }).waitFor({ timeout: 120000 });
  assert.equal(await waitTurnEnd(1), 'end_turn');
  await chat.locator('.msg.agent', { hasText: 'Hello from the scripted model. I can read, edit and run things here.' }).waitFor({ timeout: 10000 });
  assert.equal(await chat.locator('.msg.user .body').last().textContent(), 'Say hello');
  await h.screenshot('streamed-answer');
});

step('a proposed edit opens as a diff; one hunk accepted, one rejected, exactly that lands on disk', async () => {
  await sendPrompt('Change lines 2 and 15 of notes.txt');
  const acceptLens = page.locator('.codelens-decoration a', { hasText: 'Accept hunk 1/2' });
  await acceptLens.waitFor({ state: 'visible', timeout: 60000 });
  await h.screenshot('diff-review');
  assert.equal(fs.readFileSync(notes, 'utf8'), original, 'nothing is written before the review answers');
  await acceptLens.click();
  const rejectLens = page.locator('.codelens-decoration a', { hasText: 'Reject hunk 2/2' });
  await rejectLens.waitFor({ state: 'visible', timeout: 15000 });
  await page.locator('.codelens-decoration a', { hasText: 'Accepted hunk 1/2' }).waitFor({ timeout: 15000 });
  await h.screenshot('hunk-one-accepted');
  await rejectLens.click();
  assert.equal(await waitTurnEnd(2), 'end_turn');
  assert.equal(fs.readFileSync(notes, 'utf8'), expected);
  // the review tab closed itself
  assert.equal(await page.locator('.tab', { hasText: 'proposed edit' }).count(), 0);
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_edit1"]');
  assert.equal(await card.getAttribute('data-status'), 'completed');
  await h.screenshot('edit-landed');
});

step('a command is approved inside the chat, the rule in full; the notification is the second channel and closes once answered', async () => {
  await sendPrompt('Create the marker file');
  const toast = page.locator('.notification-toast', { hasText: 'touch approved.txt' });
  await toast.waitFor({ state: 'visible', timeout: 60000 });
  assert.ok(!fs.existsSync(marker), 'the command waits for approval');
  // short labels in the notification (links it can be closed after), plus Show
  for (const label of ['Allow', 'Always allow', 'Reject', 'Show']) {
    await toast.locator('a', { hasText: new RegExp(`^${label}$`) }).waitFor({ state: 'visible', timeout: 5000 });
  }
  await chat.locator('#status', { hasText: '1 waiting for you' }).waitFor({ timeout: 10000 });
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_bash1"]');
  const always = card.locator('.approval button[data-kind="allow_always"]');
  await always.waitFor({ state: 'visible', timeout: 10000 });
  const label = await always.textContent();
  const rule = /^Always allow (Bash\(touch .*\)) in this project$/.exec(label)?.[1];
  assert.ok(rule, `the button names the rule in full: ${label}`);
  assert.equal(await card.locator('.approval .exact-command').textContent(), 'touch approved.txt');
  await h.screenshot('approval-in-chat');
  await always.click();
  assert.equal(await waitTurnEnd(3), 'end_turn');
  assert.ok(fs.existsSync(marker), 'the approved command ran');
  const local = JSON.parse(fs.readFileSync(path.join(ws, '.claude', 'settings.local.json'), 'utf8'));
  assert.ok(local.permissions.allow.includes(rule), `the rule shown is the rule saved: ${JSON.stringify(local.permissions.allow)}`);
  await card.locator('.decision', { hasText: `You chose: ${label}` }).waitFor({ timeout: 10000 });
  // answered in the chat: the notification is gone, from the toasts and from the notification centre
  await toast.waitFor({ state: 'detached', timeout: 10000 });
  assert.equal(await page.locator('.notifications-list-container .notification-list-item', { hasText: 'touch approved.txt' }).count(), 0);
  await h.screenshot('command-ran');
});

step('a question is answered in the QuickPick', async () => {
  await sendPrompt('Ask me about the color');
  const widget = page.locator('.quick-input-widget');
  await widget.locator('.quick-input-title', { hasText: 'Color' }).waitFor({ state: 'visible', timeout: 60000 });
  await h.screenshot('question-quickpick');
  await widget.locator('.monaco-list-row', { hasText: 'Blue' }).click();
  assert.equal(await waitTurnEnd(4), 'end_turn');
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_ask1"]');
  await card.locator('summary').click();
  assert.match(await card.locator('.output').textContent(), /Blue/);
  await chat.locator('.msg.agent', { hasText: 'Blue it is.' }).waitFor({ timeout: 10000 });
  await h.screenshot('question-answered');
});

step('the stop button cancels a streaming turn', async () => {
  await sendPrompt('Count slowly');
  const msg = chat.locator('.msg.agent').last();
  await chat.locator('.msg.agent', { hasText: 'Counting slowly' }).waitFor({ timeout: 60000 });
  await chat.locator('#stop').waitFor({ state: 'visible' });
  await h.screenshot('streaming-before-stop');
  await chat.locator('#stop').click();
  assert.equal(await waitTurnEnd(5, 30000), 'cancelled');
  const text = await msg.textContent();
  assert.ok(!text.includes(' 200'), 'the answer stopped before its end');
  assert.ok(await chat.locator('#stop').isHidden());
  await h.screenshot('stopped');
  assert.ok((await turnsFinished()) >= 5);
  await sleep(200);
});

step('stopping a turn closes the question it was waiting on', async () => {
  await sendPrompt('Ask about deploying');
  const title = page.locator('.quick-input-widget .quick-input-title', { hasText: 'Deploy' });
  await title.waitFor({ state: 'visible', timeout: 60000 });
  await chat.locator('#status', { hasText: '1 waiting for you' }).waitFor({ timeout: 10000 });
  await h.screenshot('question-before-stop');
  await chat.locator('#stop').click();
  assert.equal(await waitTurnEnd(6, 30000), 'cancelled');
  await title.waitFor({ state: 'hidden', timeout: 10000 });
  await chat.locator('#status:empty').waitFor({ state: 'attached', timeout: 10000 });
  await h.screenshot('question-closed');
});

step('a command rejected with a note shows as the user decision, with the note', async () => {
  await sendPrompt('Clean the build');
  const card = chat.locator('.tool-card[data-tool-call-id="toolu_bash_rm"]');
  await card.locator('.approval button', { hasText: 'Reject with a note' }).click({ timeout: 60000 });
  await card.locator('.note-input').fill('keep the build folder');
  await card.locator('.approval button', { hasText: 'Reject and send note' }).click();
  assert.equal(await waitTurnEnd(7), 'end_turn');
  await card.locator('.decision', { hasText: 'keep the build folder' }).waitFor({ timeout: 10000 });
  assert.equal(await card.getAttribute('data-decision'), 'rejected');
  assert.equal(await card.locator('.tool-status').textContent(), 'rejected by you');
  // the note reached the model: the next request's tool_result for that call carries it
  const req = await h.modelRequest((b) => JSON.stringify(b.messages).includes('toolu_bash_rm') && JSON.stringify(b.messages).includes('keep the build folder'));
  const result = req.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((c) => c.type === 'tool_result' && c.tool_use_id === 'toolu_bash_rm');
  assert.ok(result, 'the rejected call has its tool_result');
  assert.match(JSON.stringify(result.content), /keep the build folder/);
  // answered in the chat: its notification closed itself
  await page.locator('.notification-toast', { hasText: 'rm -rf build' }).waitFor({ state: 'detached', timeout: 10000 });
  await h.screenshot('rejected-with-note');
});

step('tool cards: relative summaries, Edit inline diff, capped output, a nested sub-agent, highlighted code', async () => {
  await chat.locator('#mode').selectOption('acceptEdits');
  await sendPrompt('Clamp the price at zero');
  assert.equal(await waitTurnEnd(8, 90000), 'end_turn');
  assert.equal(fs.readFileSync(pricing, 'utf8'), pricingText.replace('return amount - discount', 'return max(0, amount - discount)'));
  const grep = chat.locator('.tool-card[data-tool-call-id="toolu_grep"] .summary-text');
  assert.match(await grep.textContent(), /^Grep "discount" — \d+ matches in \d+ files?$/);
  const edit = chat.locator('.tool-card[data-tool-call-id="toolu_edit_p"]');
  assert.equal(await edit.locator('.summary-text').textContent(), 'Edit pricing.py +1 −1');
  await edit.locator('summary').click();
  await edit.locator('.diff-line.add', { hasText: 'return max(0, amount - discount)' }).waitFor({ timeout: 10000 });
  await edit.locator('.diff-line.del', { hasText: 'return amount - discount' }).waitFor({ timeout: 10000 });
  await edit.scrollIntoViewIfNeeded();
  await h.screenshot('edit-inline-diff');
  const seq = chat.locator('.tool-card[data-tool-call-id="toolu_seq"]');
  assert.equal(await seq.locator('.summary-text').textContent(), 'Print 500 lines: `seq 1 500` — exit 0');
  await seq.locator('summary').click();
  const out = seq.locator('.output pre.text');
  assert.equal((await out.textContent()).split('\n').length, 20);
  await seq.locator('button', { hasText: 'Show all (481 more lines)' }).or(seq.locator('button', { hasText: /^Show all/ })).first().waitFor();
  const height = (await seq.boundingBox()).height;
  assert.ok(height < 700, `the capped card is ${height}px tall`);
  await seq.scrollIntoViewIfNeeded();
  await h.screenshot('capped-output');
  await seq.locator('button', { hasText: 'Open in editor' }).click();
  await page.locator('.tab', { hasText: 'Bash output' }).waitFor({ timeout: 15000 });
  await page.locator('.view-lines', { hasText: '481' }).first().waitFor({ state: 'attached', timeout: 15000 }).catch(() => undefined);
  await page.locator('.editor-instance .view-line').first().waitFor({ timeout: 15000 });
  await h.screenshot('output-in-editor');
  const task = chat.locator('.tool-card[data-tool-call-id="toolu_task"]');
  assert.match(await task.locator('> summary .summary-text').textContent(), /^Explore: Find alpha/);
  const nested = task.locator('.children .tool-card[data-tool-call-id="toolu_sub_read"]');
  await nested.waitFor({ state: 'attached', timeout: 10000 });
  assert.equal(await nested.locator('.summary-text').textContent(), 'Read notes.txt lines 1–3');
  assert.equal(await chat.locator('#transcript > .tool-card[data-tool-call-id="toolu_sub_read"]').count(), 0);
  await task.locator('> summary').click();
  await task.scrollIntoViewIfNeeded();
  await h.screenshot('nested-subagent');
  const code = chat.locator('.msg.agent .code-block').last();
  assert.ok((await code.locator('.hljs-keyword').count()) > 0, 'the code block is highlighted');
  await code.locator('.copy-code').waitFor();
  assert.equal(await chat.locator('.msg.agent .table-wrap table').count() > 0, true);
  await code.scrollIntoViewIfNeeded();
  await h.screenshot('rendered-markdown');
  await chat.locator('#mode').selectOption('default');
});

step('scrolling up during a stream stays put; the pill jumps back', async () => {
  await sendPrompt('Read slowly');
  await chat.locator('.msg.agent', { hasText: 'point 5' }).waitFor({ timeout: 60000 });
  await chat.locator('#transcript').evaluate((t) => (t.scrollTop = 0));
  await sleep(300);
  await chat.locator('#new-activity:not([hidden])').waitFor({ timeout: 20000 });
  const top = await chat.locator('#transcript').evaluate((t) => t.scrollTop);
  assert.ok(top < 5, `the view stayed where the user put it (scrollTop ${top})`);
  await h.screenshot('scrolled-up-pill');
  assert.equal(await waitTurnEnd(9, 90000), 'end_turn');
  assert.ok((await chat.locator('#transcript').evaluate((t) => t.scrollTop)) < 5);
  await chat.locator('#new-activity').click();
  const atBottom = await chat.locator('#transcript').evaluate((t) => t.scrollHeight - t.clientHeight - t.scrollTop < 30);
  assert.ok(atBottom);
});

step('a turn that ends while the panel is hidden raises "turn finished"', async () => {
  await sendPrompt('Work in the background');
  await chat.locator('.msg.agent', { hasText: 'Working' }).waitFor({ timeout: 60000 });
  await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').first().click();
  const toast = page.locator('.notification-toast', { hasText: 'the agent finished its turn' });
  await toast.waitFor({ state: 'visible', timeout: 60000 });
  await h.screenshot('hidden-panel-turn-finished');
  await toast.locator('.monaco-button', { hasText: 'Show' }).click();
  await chat.locator('.turn-marker').nth(9).waitFor({ state: 'attached', timeout: 30000 });
});

step('@ completes workspace files inline; / lists the commands', async () => {
  const box = chat.locator('#prompt');
  await box.fill('');
  await box.pressSequentially('look at @pri');
  const item = chat.locator('#menu .menu-item', { hasText: 'pricing.py' }).first();
  await item.waitFor({ state: 'visible', timeout: 15000 });
  await h.screenshot('at-completion');
  await box.press('Enter');
  assert.equal(await box.inputValue(), 'look at @pricing.py ');
  // the mention is the text: no chip repeats it (it is sent once, as a link to the file)
  assert.equal(await chat.locator('#context .chip').count(), 0);
  await box.fill('');
  await box.pressSequentially('/');
  for (const name of ['/compact', '/clear', '/model']) await chat.locator('#menu .menu-item', { hasText: name }).waitFor({ timeout: 10000 });
  await h.screenshot('slash-menu');
  await box.press('Escape');
  await box.fill('');
});

/** Sends a prompt and waits for its turn to end (counted from the markers present before it). */
async function sendAndWait(text, timeout = 90000) {
  const n = await turnsFinished();
  await sendPrompt(text);
  return waitTurnEnd(n + 1, timeout);
}

step('Restore code after two edits brings the files back, byte for byte', async () => {
  const before = fs.readFileSync(notes);
  assert.ok(!fs.existsSync(created));
  await chat.locator('#mode').selectOption('acceptEdits');
  assert.equal(await sendAndWait('Make the first edit'), 'end_turn');
  assert.equal(await sendAndWait('Make the second edit'), 'end_turn');
  await chat.locator('#mode').selectOption('default');
  assert.match(fs.readFileSync(notes, 'utf8'), /line 1 \(first edit\)\n[^]*line 3 \(second edit\)\n/);
  assert.equal(fs.readFileSync(created, 'utf8'), 'made by the second turn\n');
  const first = chat.locator('.msg.user', { hasText: 'Make the first edit' });
  const toggle = first.locator('.msg-actions-toggle');
  await toggle.waitFor({ state: 'attached', timeout: 10000 });
  assert.equal(await toggle.getAttribute('aria-label'), 'Checkpoint actions');
  assert.match(await toggle.getAttribute('title'), /^Restore code or conversation/);
  // no space reserved: the actions are out of flow, the message is as tall with them as without them
  await first.scrollIntoViewIfNeeded();
  const layout = await first.evaluate((w) => {
    const a = w.querySelector('.msg-actions');
    const withActions = w.getBoundingClientRect().height;
    a.style.display = 'none';
    const without = w.getBoundingClientRect().height;
    a.style.display = '';
    const body = w.querySelector('.body').getBoundingClientRect();
    return { withActions, without, position: getComputedStyle(a).position, bodyHeight: body.height, padding: parseFloat(getComputedStyle(w).paddingTop) + parseFloat(getComputedStyle(w).paddingBottom) };
  });
  assert.equal(layout.position, 'absolute');
  assert.equal(layout.withActions, layout.without, 'the actions add no height to the message');
  assert.ok(Math.abs(layout.withActions - layout.bodyHeight - layout.padding) < 1, `the message is its text and padding only: ${JSON.stringify(layout)}`);
  // hidden until hover, and hovering moves nothing
  await chat.locator('#prompt').hover();
  assert.equal(await first.locator('.msg-actions').evaluate((a) => getComputedStyle(a).opacity), '0');
  const box0 = await first.boundingBox();
  await first.hover();
  await first.locator('.msg-actions').evaluate((a) => new Promise((resolve) => {
    const check = () => (getComputedStyle(a).opacity === '1' ? resolve() : requestAnimationFrame(check));
    check();
  }));
  assert.deepEqual(await first.boundingBox(), box0, 'the message does not move when its actions show');
  // a click opens the menu: the four actions, the first one focused; a click outside closes it
  await toggle.click();
  const menu = chat.locator('.msg-menu[role="menu"]');
  await menu.waitFor({ state: 'visible', timeout: 5000 });
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  assert.deepEqual(await menu.locator('[role="menuitem"]').allTextContents(), ['Restore code', 'Restore conversation', 'Restore both', 'Compare', 'Edit & resend']);
  assert.deepEqual(await menu.locator('[role="menuitem"]').evaluateAll((bs) => bs.map((b) => b.dataset.action)), ['code', 'conversation', 'both', 'compare', 'edit']);
  assert.match(await menu.locator('[data-action="both"]').getAttribute('title'), /files and the conversation/);
  assert.equal(await chat.locator(':focus').getAttribute('data-action'), 'code');
  assert.deepEqual(await first.boundingBox(), box0, 'opening the menu moves nothing');
  await h.screenshot('checkpoint-menu');
  const bar = await page.locator('.part.sidebar').boundingBox();
  await h.screenshot('checkpoint-menu-sidebar', { clip: { x: bar.x, y: bar.y, width: bar.width, height: bar.height } });
  await first.click({ position: { x: 4, y: 4 } });
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  await first.hover();
  await toggle.click();
  await menu.locator('[data-action="code"]').click();
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  // asked first, in the message: nothing is restored until confirmed
  const confirm = first.locator('.restore-confirm');
  await confirm.waitFor({ state: 'visible', timeout: 5000 });
  await h.screenshot('checkpoint-code-confirm');
  assert.ok(fs.existsSync(created), 'nothing is restored before the confirmation');
  await confirm.locator('.cancel-restore').click();
  await confirm.waitFor({ state: 'detached', timeout: 5000 });
  assert.ok(fs.existsSync(created), 'Cancel restores nothing');
  await first.hover();
  await toggle.click();
  await menu.locator('[data-action="code"]').click();
  await first.locator('.restore-confirm .confirm-restore').click();
  // the outcome is told beside the message, not at the end of the transcript
  await chat.locator('.notice', { hasText: 'Restored' }).last().waitFor({ timeout: 15000 });
  const notice = await first.evaluate((m) => (m.nextElementSibling?.classList.contains('notice') ? m.nextElementSibling.textContent : ''));
  assert.match(notice, /notes\.txt/);
  assert.match(notice, /created\.txt/);
  assert.deepEqual(fs.readFileSync(notes), before, 'notes.txt has its bytes from before the first edit');
  assert.ok(!fs.existsSync(created), 'the file the second turn created is gone');
  // code only: the conversation stays
  await chat.locator('.msg.agent', { hasText: 'Second edit done.' }).waitFor({ state: 'attached', timeout: 5000 });
  await h.screenshot('checkpoint-code-restored');
  // "Undo restore" on the notice puts the files back as they were just before the restore
  const undo = first.locator('xpath=following-sibling::div[contains(@class, "notice")][1]').locator('.undo-restore');
  await undo.click();
  await chat.locator('.notice', { hasText: 'Undid the restore' }).waitFor({ timeout: 15000 });
  assert.match(await chat.locator('.notice', { hasText: 'Undid the restore' }).textContent(), /created\.txt, notes\.txt are as before it/);
  assert.match(fs.readFileSync(notes, 'utf8'), /line 1 \(first edit\)\n[^]*line 3 \(second edit\)\n/);
  assert.equal(fs.readFileSync(created, 'utf8'), 'made by the second turn\n');
  assert.equal(await chat.locator('.undo-restore').count(), 0, 'nothing more to undo');
  await h.screenshot('checkpoint-restore-undone');
  // and restored again (the checkpoints are as before the restore): the next step starts from there
  await first.hover();
  await toggle.click();
  await menu.locator('[data-action="code"]').click();
  await first.locator('.restore-confirm .confirm-restore').click();
  await chat.locator('.notice', { hasText: 'Restored' }).nth(1).waitFor({ timeout: 15000 });
  assert.deepEqual(fs.readFileSync(notes), before);
  assert.ok(!fs.existsSync(created));
  // Compare's line under the message leaves that restore's "Undo restore" (any line with a message id took it)
  await first.hover();
  await toggle.click();
  await menu.locator('[data-action="compare"]').click();
  await chat.locator('.notice', { hasText: 'Nothing to compare' }).waitFor({ timeout: 15000 });
  assert.equal(await chat.locator('.undo-restore').count(), 1, 'the restore can still be undone');
});

step('Edit & resend replaces the turn', async () => {
  // by keyboard: Tab goes from the first message's button to the second's (visible while focused),
  // Enter opens the menu, End picks Edit & resend
  const second = chat.locator('.msg.user', { hasText: 'Make the second edit' });
  const toggle = second.locator('.msg-actions-toggle');
  await chat.locator('#prompt').hover();
  await chat.locator('.msg.user', { hasText: 'Make the first edit' }).locator('.msg-actions-toggle').focus();
  for (let i = 0; i < 30 && !(await toggle.evaluate((b) => b === document.activeElement)); i++) await chat.locator(':focus').press('Tab');
  assert.ok(await toggle.evaluate((b) => b === document.activeElement), 'Tab reaches the second message\'s checkpoint button');
  await second.locator('.msg-actions').evaluate((a) => new Promise((resolve) => {
    const check = () => (getComputedStyle(a).opacity === '1' ? resolve() : requestAnimationFrame(check));
    check();
  }));
  await toggle.press('Enter');
  const menu = chat.locator('.msg-menu[role="menu"]');
  await menu.waitFor({ state: 'visible', timeout: 5000 });
  assert.equal(await chat.locator(':focus').getAttribute('data-action'), 'code');
  await chat.locator(':focus').press('Escape');
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  assert.ok(await toggle.evaluate((b) => b === document.activeElement), 'Escape puts focus back on the button');
  await toggle.press('Enter');
  await menu.waitFor({ state: 'visible', timeout: 5000 });
  await chat.locator(':focus').press('End');
  assert.equal(await chat.locator(':focus').getAttribute('data-action'), 'edit');
  await h.screenshot('checkpoint-menu-keyboard');
  await chat.locator(':focus').press('Enter');
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  const box = second.locator('.edit-box');
  assert.equal(await box.inputValue(), 'Make the second edit');
  await box.fill('Say goodbye instead');
  await h.screenshot('edit-and-resend');
  await second.locator('.edit-send').click();
  await chat.locator('.msg.agent', { hasText: 'Goodbye instead.' }).waitFor({ timeout: 60000 });
  await chat.locator('body[data-busy="false"]').waitFor({ state: 'attached', timeout: 30000 });
  // the old turn left the transcript; the edited message took its place after the first turn
  assert.equal(await chat.locator('.msg.user', { hasText: 'Make the second edit' }).count(), 0);
  assert.equal(await chat.locator('.msg.agent', { hasText: 'Second edit done.' }).count(), 0);
  await chat.locator('.msg.user', { hasText: 'Say goodbye instead' }).waitFor({ state: 'attached' });
  assert.equal(await chat.locator('.msg.agent', { hasText: 'First edit done.' }).count(), 1);
  // and the model's view of the conversation: the replaced turn is gone from its request
  const req = await h.modelRequest((b) => JSON.stringify(b.messages).includes('Say goodbye instead'));
  const sent = JSON.stringify(req.messages);
  assert.ok(sent.includes('Say goodbye instead'));
  assert.ok(sent.includes('Make the first edit'));
  assert.ok(!sent.includes('Make the second edit'), 'the replaced message is not in the request');
  assert.ok(!sent.includes('toolu_cp_edit2'), 'nor its tool calls');
  await h.screenshot('edit-and-resend-done');
});

step('a pasted image reaches the model request as an image block', async () => {
  const box = chat.locator('#prompt');
  await box.fill('What is in this image?');
  await box.evaluate((el, b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'pixel.png', { type: 'image/png' }));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, pixelPng);
  await chat.locator('#context .chip', { hasText: 'image 1' }).waitFor({ timeout: 10000 });
  await h.screenshot('image-pasted');
  const n = await turnsFinished();
  await chat.locator('#send').click();
  assert.equal(await waitTurnEnd(n + 1), 'end_turn');
  await chat.locator('.msg.user img.thumb').last().waitFor({ state: 'attached' });
  const req = await h.modelRequest((b) => JSON.stringify(b.messages).includes('What is in this image?'));
  const last = req.messages.at(-1);
  const image = last.content.find((c) => c.type === 'image');
  assert.ok(image, `the request carries an image block: ${JSON.stringify(last.content).slice(0, 300)}`);
  assert.equal(image.source.type, 'base64');
  assert.equal(image.source.media_type, 'image/png');
  assert.equal(image.source.data, pixelPng);
});

step('a hidden panel gets "waiting" for a question, then "turn finished"', async () => {
  const n = await turnsFinished();
  await sendPrompt('Ask me while I am away');
  await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').first().click();
  const waiting = page.locator('.notification-toast', { hasText: 'The agent has a question for you' });
  await waiting.waitFor({ state: 'visible', timeout: 60000 });
  await waiting.locator('.monaco-button', { hasText: 'Show' }).waitFor({ state: 'visible' });
  await h.screenshot('hidden-panel-waiting');
  const widget = page.locator('.quick-input-widget');
  await widget.locator('.quick-input-title', { hasText: 'Ship' }).waitFor({ state: 'visible', timeout: 30000 });
  await widget.locator('.monaco-list-row', { hasText: 'Tomorrow' }).click();
  const finished = page.locator('.notification-toast', { hasText: 'the agent finished its turn' });
  await finished.last().waitFor({ state: 'visible', timeout: 60000 });
  await h.screenshot('hidden-panel-question-finished');
  await finished.last().locator('.monaco-button', { hasText: 'Show' }).click();
  assert.equal(await waitTurnEnd(n + 1), 'end_turn');
  await chat.locator('.msg.agent', { hasText: 'Tomorrow then.' }).waitFor({ timeout: 10000 });
  for (const t of await page.locator('.notification-toast .codicon-notifications-clear').all()) await t.click().catch(() => undefined);
});

step('the model and effort picked in the prompt footer answer the next prompt', async () => {
  const model = chat.locator('#config select[data-config-id="model"]');
  const effort = chat.locator('#config select[data-config-id="effort"]');
  await model.waitFor({ state: 'visible', timeout: 10000 });
  assert.equal(await effort.locator('option').count(), 5, 'the default model offers five effort levels');
  await model.selectOption('claude-opus-4-5');
  // The sidecar's answer: that model has three levels.
  await chat.locator('#config select[data-config-id="effort"]:not(:has(option[value="max"]))').waitFor({ state: 'attached', timeout: 15000 });
  assert.equal(await model.locator('option:checked').textContent(), 'Claude Opus 4.5');
  await effort.selectOption('high');
  await h.screenshot('model-picked');
  const n = await turnsFinished();
  await sendPrompt('Which model are you?');
  assert.equal(await waitTurnEnd(n + 1), 'end_turn');
  const req = await h.modelRequest((b) => JSON.stringify(b.messages).includes('Which model are you?'));
  assert.equal(req.model, 'claude-opus-4-5');
  assert.deepEqual(req.output_config, { effort: 'high' });
  assert.deepEqual(req.thinking, { type: 'enabled', budget_tokens: 16000 });
});

step('a new session starts empty; resuming the earlier one replays its conversation', async () => {
  const first = await chat.locator('body').getAttribute('data-session-id');
  assert.ok(first);
  await chat.locator('#new-session').click();
  await chat.locator(`body:not([data-session-id="${first}"]):not([data-session-id=""])`).waitFor({ state: 'attached', timeout: 30000 });
  assert.equal(await chat.locator('.msg').count(), 0);
  await chat.locator(`#sessions option[value="${first}"]`).waitFor({ state: 'attached', timeout: 15000 });
  await chat.locator('#sessions').selectOption(first);
  await chat.locator('.msg.agent', { hasText: 'Hello from the scripted model.' }).waitFor({ timeout: 30000 });
  await chat.locator('.msg.user', { hasText: 'Say hello' }).waitFor({ timeout: 10000 });
  assert.equal(await chat.locator('body').getAttribute('data-session-id'), first);
  // The picked model came back with it (session/load answers after the replay).
  await chat.waitForFunction(() => document.querySelector('#config select[data-config-id="model"]')?.value === 'claude-opus-4-5', undefined, { timeout: 15000 });
  await h.screenshot('session-resumed');
});

// Last: it changes the layout.
step('dark theme and a narrow side bar', async () => {
  // The theme through the command palette, as a user would; the row is clicked by its exact label.
  await runCommand(page, 'Preferences: Color Theme');
  await pickQuickInput(page, 'Dark Modern', 'Dark Modern');
  await page.locator('.monaco-workbench.vs-dark').waitFor({ state: 'attached', timeout: 15000 });
  await chat.locator('body.vscode-dark').waitFor({ state: 'attached', timeout: 15000 });
  // The editors closed so the screenshots show the panel next to an empty editor area.
  await runCommand(page, 'View: Close All Editors');
  const sidebar = page.locator('.part.sidebar');
  const box = await sidebar.boundingBox();
  const x = box.x + box.width;
  await page.mouse.move(x - 1, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + 170, box.y + box.height / 2, { steps: 10 });
  await page.mouse.up();
  await sleep(500);
  const approved = chat.locator('.tool-card[data-tool-call-id="toolu_bash1"]');
  await approved.locator('> summary').click();
  await approved.scrollIntoViewIfNeeded();
  await h.screenshot('dark-narrow-approval-card');
  await chat.locator('.tool-card[data-tool-call-id="toolu_edit_p"]').scrollIntoViewIfNeeded();
  await h.screenshot('dark-narrow-edit');
  const width = (await sidebar.boundingBox()).width;
  assert.ok(width < 260, `the side bar is ${width}px wide`);
  const overflow = await chat.locator('body').evaluate((b) => b.scrollWidth - b.clientWidth);
  assert.ok(overflow <= 1, `nothing overflows the narrow panel (${overflow}px)`);
  // the checkpoint menu in the narrow panel stays inside it
  const msg = chat.locator('.msg.user', { hasText: 'Say hello' }).first();
  await msg.scrollIntoViewIfNeeded();
  await msg.hover();
  await msg.locator('.msg-actions-toggle').click();
  const menu = chat.locator('.msg-menu[role="menu"]');
  await menu.waitFor({ state: 'visible', timeout: 5000 });
  const fit = await menu.evaluate((m) => {
    const r = m.getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: window.innerWidth, height: window.innerHeight };
  });
  assert.ok(fit.left >= 0 && fit.right <= fit.width && fit.top >= 0 && fit.bottom <= fit.height, `the menu is inside the panel: ${JSON.stringify(fit)}`);
  await h.screenshot('dark-narrow-checkpoint-menu');
  await page.keyboard.press('Escape');
  await menu.waitFor({ state: 'detached', timeout: 5000 });
});
