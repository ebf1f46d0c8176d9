import { beforeEach, describe, expect, it } from 'vitest';
import * as vscode from 'vscode';
import { OTHER_LABEL, askUser } from '../../src/handlers/askUser';
import type { AskUserParams } from '../../src/protocol';
import { type FakeQuickPick, ui, resetMock } from '../mocks/vscode';

const params: AskUserParams = {
  sessionId: 's1',
  toolCallId: 't1',
  questions: [
    { question: 'Which color?', header: 'Color', multiSelect: false, options: [{ label: 'Red', description: 'warm' }, { label: 'Blue', description: 'cool' }] },
    { question: 'Which sizes?', header: 'Sizes', multiSelect: true, options: [{ label: 'S', description: '' }, { label: 'M', description: '' }, { label: 'L', description: '' }] },
  ],
};

beforeEach(() => resetMock());

describe('_sidecar/ask_user', () => {
  it('asks one QuickPick per question, multi-select where asked, and answers by question text', async () => {
    const answers = [['Blue'], ['S', 'L']];
    ui.onQuickPick = (qp: FakeQuickPick) => qp.accept(answers.shift() as string[]);
    const r = await askUser(params);
    expect(r).toEqual({ outcome: 'answered', answers: { 'Which color?': ['Blue'], 'Which sizes?': ['S', 'L'] } });
    const [first, second] = ui.quickPicks;
    expect(first.title).toBe('Color (1/2)');
    expect(first.placeholder).toBe('Which color?');
    expect(first.canSelectMany).toBe(false);
    expect(first.items.map((i) => i.label)).toEqual(['Red', 'Blue', OTHER_LABEL]);
    expect(first.items[0].detail).toBe('warm');
    expect(second.canSelectMany).toBe(true);
    expect(first.disposed && second.disposed).toBe(true);
  });

  it('"Other…" opens an InputBox and its text becomes the answer', async () => {
    ui.inputAnswers.push('  Green  ');
    ui.onQuickPick = (qp: FakeQuickPick) => qp.accept([OTHER_LABEL]);
    const r = await askUser({ ...params, questions: [params.questions[0]] });
    expect(r).toEqual({ outcome: 'answered', answers: { 'Which color?': ['Green'] } });
    expect(ui.inputBoxes[0]).toMatchObject({ prompt: 'Which color?', title: 'Color' });
  });

  it('escaping a QuickPick cancels the whole question set', async () => {
    ui.onQuickPick = (qp: FakeQuickPick) => qp.hide();
    expect(await askUser(params)).toEqual({ outcome: 'cancelled', answers: {} });
    expect(ui.quickPicks).toHaveLength(1);
  });

  it('a cancel from the sidecar hides the open QuickPick and answers cancelled', async () => {
    const src = new vscode.CancellationTokenSource();
    const p = askUser(params, src.token as unknown as vscode.CancellationToken);
    await Promise.resolve();
    const qp = ui.quickPicks[0];
    expect(qp.visible).toBe(true);
    src.cancel();
    expect(await p).toEqual({ outcome: 'cancelled', answers: {} });
    expect(qp.visible).toBe(false);
  });
});
