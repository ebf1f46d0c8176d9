// The conversation survives (issue 12): a model API failing on every attempt shows the retry line, then one
// readable error with Retry, and Retry completes the turn once the model recovers; then, with
// sidecar.pythonPath only in User settings, Reload Window twice: the agent starts each time and the panel
// reopens the same conversation, its transcript's DOM the same before and after; a replayed message's
// checkpoint menu by keyboard (Restore conversation), Restore both on a new turn, in a dark theme and then
// high contrast. Screenshots in artifacts/e2e/reload-*.png.
/* global document, getComputedStyle, requestAnimationFrame, window -- used inside evaluate, in the browser */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, chatFrame, pickQuickInput, runCommand, stepper } from './harness.mjs';

const h = new Harness('reload');
const step = stepper(h);
const notes = path.join(h.workspace, 'notes.txt');
// 7 attempts (SIDECAR_MAX_RETRIES 6): each a 500 whose retry-after keeps the waits at 1 s.
const failing = Array.from({ length: 7 }, () => ({ fault: 'http', status: 500, headers: { 'retry-after': '1' } }));

const turns = [
  { content: [{ type: 'text', text: 'Hello from the **scripted** model.' }], text_chunk: 8, chunk_delay: 0.02 },
  { content: [{ type: 'tool_use', id: 'toolu_read_r', name: 'Read', input: { file_path: notes } }] },
  { content: [{ type: 'text', text: 'The file has three lines.' }] },
  { content: [{ type: 'text', text: 'Counting slowly: ' + Array.from({ length: 200 }, (_, i) => String(i + 1)).join(' ') }], text_chunk: 4, chunk_delay: 0.15 },
  ...failing,
  { content: [{ type: 'text', text: 'Recovered: the answer after the retry.' }] },
  // after the reloads: a turn that edits notes.txt, for Restore both
  { content: [{ type: 'tool_use', id: 'toolu_read_e', name: 'Read', input: { file_path: notes } }] },
  { content: [{ type: 'tool_use', id: 'toolu_edit_e', name: 'Edit', input: { file_path: notes, old_string: 'two\n', new_string: 'two (edited)\n' } }] },
  { content: [{ type: 'text', text: 'Notes edited.' }] },
];

let page;
let chat;

before(async () => {
  fs.writeFileSync(notes, 'one\ntwo\nthree\n');
  // sidecar.pythonPath in User settings only (a remote window may not apply it again after a reload).
  // a dark theme here (the main flow runs in the default light one): the screenshots show both
  ({ page, chat } = await h.startWorkbench(turns, { apiKey: false, settings: { 'workbench.colorTheme': 'Default Dark Modern' } }));
});

after(async () => {
  await h.close();
});

async function markers() {
  return chat.locator('.turn-marker').count();
}

async function send(text) {
  await chat.locator('#prompt').fill(text);
  await chat.locator('#send').click();
}

async function sendAndWait(text, timeout = 60000) {
  const n = await markers();
  await send(text);
  await chat.locator('.turn-marker').nth(n).waitFor({ state: 'attached', timeout });
  return chat.locator('.turn-marker').nth(n).getAttribute('data-stop-reason');
}

/** The transcript as markup, for comparing the live conversation with the reopened one. */
async function transcriptDom() {
  return chat.locator('#transcript').evaluate((t) => {
    const copy = t.cloneNode(true);
    return copy.innerHTML;
  });
}

step('a conversation: a streamed answer, a tool call, a stopped turn', async () => {
  assert.equal(await sendAndWait('Say hello'), 'end_turn');
  await chat.locator('.msg.agent strong', { hasText: 'scripted' }).waitFor({ timeout: 10000 });
  assert.equal(await sendAndWait('Read notes.txt'), 'end_turn');
  await chat.locator('.tool-card[data-tool-call-id="toolu_read_r"][data-status="completed"]').waitFor({ state: 'attached', timeout: 10000 });
  const n = await markers();
  await send('Count slowly');
  await chat.locator('.msg.agent', { hasText: 'Counting slowly' }).waitFor({ timeout: 60000 });
  await chat.locator('#stop').click();
  await chat.locator('.turn-marker').nth(n).waitFor({ state: 'attached', timeout: 30000 });
  assert.equal(await chat.locator('.turn-marker').nth(n).getAttribute('data-stop-reason'), 'cancelled');
  await chat.locator('.turn-end.cancelled', { hasText: 'Stopped.' }).waitFor({ state: 'attached' });
  await h.screenshot('stopped');
});

step('a model failing on every attempt: the retry line, then one readable error with Retry; Retry completes the turn', async () => {
  const n = await markers();
  await send('Summarize the file');
  const line = chat.locator('.retry-line');
  await line.waitFor({ state: 'visible', timeout: 30000 });
  const first = await line.textContent();
  assert.match(first, /^Retrying… attempt \d of 7 (in \d+ s|now): HTTP 500 server error$/);
  await h.screenshot('retry-line');
  await chat.locator('.turn-marker').nth(n).waitFor({ state: 'attached', timeout: 90000 });
  assert.equal(await chat.locator('.turn-marker').nth(n).getAttribute('data-stop-reason'), 'error');
  assert.equal(await line.count(), 0, 'the retry line is gone once the turn ended');
  const errors = chat.locator('#transcript .error');
  assert.equal(await errors.count(), 1, 'the failure is said once');
  const text = await errors.locator('.error-text').textContent();
  assert.match(text, /HTTP 500/);
  assert.match(text, /7 attempts/);
  assert.doesNotMatch(text, /[{}]|'type'|Traceback/, `no repr or JSON: ${text}`);
  assert.equal(await chat.locator('.msg.agent', { hasText: 'HTTP 500' }).count(), 0, 'not repeated as agent text');
  const retry = errors.locator('button.retry-btn', { hasText: 'Retry' });
  await retry.waitFor({ state: 'visible' });
  await h.screenshot('error-with-retry');
  await retry.click();
  await chat.locator('.turn-marker').nth(n + 1).waitFor({ state: 'attached', timeout: 60000 });
  assert.equal(await chat.locator('.turn-marker').nth(n + 1).getAttribute('data-stop-reason'), 'end_turn');
  await chat.locator('.msg.agent', { hasText: 'Recovered: the answer after the retry.' }).waitFor({ timeout: 10000 });
  assert.equal(await chat.locator('.msg.user', { hasText: 'Summarize the file' }).count(), 2, 'Retry sent the same message again');
  assert.equal(await chat.locator('.retry-btn').count(), 0, 'Retry is offered for the last failure only');
  await h.screenshot('retried');
});

step('Reload Window twice: the agent starts each time and the same conversation reopens, DOM for DOM', async () => {
  await sleep(500);
  const sessionId = await chat.locator('body').getAttribute('data-session-id');
  assert.ok(sessionId);
  const before = await transcriptDom();
  const count = await markers();
  await h.screenshot('before-reload');
  for (let i = 1; i <= 2; i++) {
    await runCommand(page, 'Developer: Reload Window');
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    await sleep(1000);
    chat = await chatFrame(page);
    await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 120000 });
    await chat.locator(`body[data-session-id="${sessionId}"]`).waitFor({ state: 'attached', timeout: 30000 });
    await chat.locator('.turn-marker').nth(count - 1).waitFor({ state: 'attached', timeout: 30000 });
    await sleep(800); // the last frame's Markdown
    assert.equal(await chat.locator('#status').textContent(), '');
    await h.screenshot(`after-reload-${i}`);
    const after = await transcriptDom();
    assert.equal(after, before, `the transcript after reload ${i} is the one before it`);
  }
  // checkpoints still find their message after the reload
  await chat.locator('.msg.user', { hasText: 'Say hello' }).locator('.msg-actions .msg-actions-toggle').waitFor({ state: 'attached' });
});

/** The side bar's rectangle on the page (for close-up screenshots). */
async function sideBar(p) {
  const b = await p.locator('.part.sidebar').boundingBox();
  return { x: b.x, y: b.y, width: b.width, height: b.height };
}

/** Waits until the element's computed opacity is 1 (the checkpoint button shown). */
async function shown(locator) {
  await locator.evaluate((a) => new Promise((resolve) => {
    const check = () => (getComputedStyle(a).opacity === '1' ? resolve() : requestAnimationFrame(check));
    check();
  }));
}

step('a replayed message\'s checkpoint menu by keyboard: Restore conversation drops it and what follows, the composer gets its text', async () => {
  const notesBefore = fs.readFileSync(notes);
  const users = chat.locator('.msg.user', { hasText: 'Summarize the file' });
  assert.equal(await users.count(), 2);
  const last = users.nth(1);
  const toggle = last.locator('.msg-actions-toggle');
  // Tab from the first copy's button reaches the second's, which shows while focused
  await users.nth(0).locator('.msg-actions-toggle').focus();
  for (let i = 0; i < 20 && !(await toggle.evaluate((b) => b === document.activeElement)); i++) await chat.locator(':focus').press('Tab');
  assert.ok(await toggle.evaluate((b) => b === document.activeElement), 'Tab reaches the checkpoint button');
  await shown(last.locator('.msg-actions'));
  await toggle.press('ArrowDown');
  const menu = chat.locator('.msg-menu[role="menu"]');
  await menu.waitFor({ state: 'visible', timeout: 5000 });
  assert.equal(await chat.locator(':focus').getAttribute('data-action'), 'code');
  await chat.locator(':focus').press('ArrowDown');
  assert.equal(await chat.locator(':focus').getAttribute('data-action'), 'conversation');
  // the menu fits in the narrow side bar, inside the webview
  const fit = await menu.evaluate((m) => {
    const r = m.getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: window.innerWidth, height: window.innerHeight };
  });
  assert.ok(fit.left >= 0 && fit.right <= fit.width && fit.top >= 0 && fit.bottom <= fit.height, `the menu is inside the view: ${JSON.stringify(fit)}`);
  await h.screenshot('checkpoint-menu-dark');
  await h.screenshot('checkpoint-menu-dark-sidebar', { clip: await sideBar(page) });
  await chat.locator(':focus').press('Enter');
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  await chat.locator('.msg.agent', { hasText: 'Recovered: the answer after the retry.' }).waitFor({ state: 'detached', timeout: 15000 });
  assert.equal(await users.count(), 1, 'the message left the transcript');
  assert.equal(await chat.locator('#prompt').inputValue(), 'Summarize the file', 'its text is back in the composer');
  assert.deepEqual(fs.readFileSync(notes), notesBefore, 'Restore conversation leaves the files');
  await h.screenshot('conversation-restored');
  await chat.locator('#prompt').fill('');
});

step('Restore both: the files and the conversation go back to before the message', async () => {
  const notesBefore = fs.readFileSync(notes);
  await chat.locator('#mode').selectOption('acceptEdits');
  assert.equal(await sendAndWait('Edit the notes'), 'end_turn');
  await chat.locator('#mode').selectOption('default');
  assert.equal(fs.readFileSync(notes, 'utf8'), 'one\ntwo (edited)\nthree\n');
  const msg = chat.locator('.msg.user', { hasText: 'Edit the notes' });
  await msg.locator('.msg-actions-toggle').waitFor({ state: 'attached', timeout: 10000 });
  await msg.hover();
  await shown(msg.locator('.msg-actions'));
  await msg.locator('.msg-actions-toggle').click();
  const menu = chat.locator('.msg-menu[role="menu"]');
  await menu.locator('[data-action="both"]').click();
  await menu.waitFor({ state: 'detached', timeout: 5000 });
  await msg.locator('.restore-confirm .confirm-restore').click();
  await chat.locator('.notice', { hasText: 'Restored notes.txt' }).last().waitFor({ timeout: 15000 });
  assert.deepEqual(fs.readFileSync(notes), notesBefore, 'notes.txt has its bytes from before the message');
  assert.equal(await msg.count(), 0, 'the message left the transcript');
  assert.equal(await chat.locator('.msg.agent', { hasText: 'Notes edited.' }).count(), 0);
  assert.equal(await chat.locator('#prompt').inputValue(), 'Edit the notes');
  await chat.locator('#prompt').fill('');
});

step('high contrast: the checkpoint button and menu (screenshot)', async () => {
  await runCommand(page, 'Preferences: Color Theme');
  await pickQuickInput(page, 'Dark High Contrast', 'Dark High Contrast');
  await chat.locator('body.vscode-high-contrast').waitFor({ state: 'attached', timeout: 30000 });
  const msg = chat.locator('.msg.user', { hasText: 'Read notes.txt' });
  await msg.hover();
  await msg.locator('.msg-actions-toggle').click();
  await chat.locator('.msg-menu[role="menu"]').waitFor({ state: 'visible', timeout: 5000 });
  await h.screenshot('checkpoint-menu-high-contrast', { clip: await sideBar(page) });
  await page.keyboard.press('Escape');
  await chat.locator('.msg-menu').waitFor({ state: 'detached', timeout: 5000 });
});
