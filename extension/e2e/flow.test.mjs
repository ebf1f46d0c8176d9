// End-to-end in a real VS Code (code-server 4.100.3) in headless Chromium, the extension installed from
// its .vsix, the real sidecar on the scripted model. One user's session, step by step; each step leaves
// a screenshot in artifacts/e2e/. Run with `npm run test:e2e` from the repository root.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness, chatFrame, python, repoRoot, runCommand } from './harness.mjs';

const h = new Harness();
const ws = h.workspace;
const notes = path.join(ws, 'notes.txt');
const original = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const oldBlock = Array.from({ length: 14 }, (_, i) => `line ${i + 2}`).join('\n');
const newBlock = oldBlock.replace('line 2\n', 'line 2 (changed by hunk one)\n').replace('line 15', 'line 15 (changed by hunk two)');
const expected = original.replace('line 2\n', 'line 2 (changed by hunk one)\n');
const marker = path.join(ws, 'approved.txt');

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
  assert.ok(fs.existsSync(python), `no Python at ${python}: run "uv sync" in ${repoRoot}`);
  fs.writeFileSync(notes, original);
  const url = await h.startModel(turns);
  await h.startCodeServer({
    'sidecar.pythonPath': python,
    'sidecar.apiBaseUrl': url,
    'sidecar.approvalStyle': 'notification',
  });
  page = await h.openBrowser();
  chat = await chatFrame(page);
  await chat.locator('body[data-ready="true"]').waitFor({ timeout: 90000 });
  // The API key goes into SecretStorage through the command; the agent restarts with it in its env.
  await runCommand(page, 'Sidecar: Set API Key');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill('test-key');
  await input.press('Enter');
  await chat.locator('body[data-ready="false"]').waitFor({ state: 'attached', timeout: 10000 });
  await chat.locator('body[data-ready="true"]').waitFor({ state: 'attached', timeout: 90000 });
});

// A failed step leaves the session in an unknown state: the steps after it fail at once.
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
  assert.equal(await chat.locator('.msg.user').last().textContent(), 'Say hello');
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

step('a command is approved from the notification', async () => {
  await sendPrompt('Create the marker file');
  const toast = page.locator('.notification-toast', { hasText: 'touch approved.txt' });
  await toast.waitFor({ state: 'visible', timeout: 60000 });
  assert.ok(!fs.existsSync(marker), 'the command waits for approval');
  // the chat view shows what waits
  await chat.locator('#status', { hasText: '1 waiting for you' }).waitFor({ timeout: 10000 });
  await h.screenshot('approval-notification');
  await toast.locator('.monaco-button', { hasText: 'Allow once' }).click();
  assert.equal(await waitTurnEnd(3), 'end_turn');
  assert.ok(fs.existsSync(marker), 'the approved command ran');
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
  await h.screenshot('session-resumed');
});
