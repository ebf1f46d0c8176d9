// The conversation survives (issue 12): a model API failing on every attempt shows the retry line, then one
// readable error with Retry, and Retry completes the turn once the model recovers; then, with
// sidecar.pythonPath only in User settings, Reload Window twice: the agent starts each time and the panel
// reopens the same conversation, its transcript's DOM the same before and after. Screenshots in
// artifacts/e2e/reload-*.png.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, chatFrame, runCommand } from './harness.mjs';

const h = new Harness('reload');
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
];

let page;
let chat;

before(async () => {
  fs.writeFileSync(notes, 'one\ntwo\nthree\n');
  // sidecar.pythonPath in User settings only (a remote window may not apply it again after a reload).
  ({ page, chat } = await h.startWorkbench(turns, { apiKey: false }));
});

after(async () => {
  await h.close();
});

let failedStep = null;
function step(name, fn) {
  test(name, async () => {
    if (failedStep) throw new Error(`not run: the step "${failedStep}" failed`);
    try {
      await fn();
    } catch (e) {
      failedStep = name;
      await h.screenshot('failed').catch(() => undefined);
      throw e;
    }
  });
}

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
  await chat.locator('.msg.user', { hasText: 'Say hello' }).locator('.msg-actions button[data-action="code"]').waitFor({ state: 'attached' });
});
