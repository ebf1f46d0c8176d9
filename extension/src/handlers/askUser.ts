/**
 * `_sidecar/ask_user`: one QuickPick per question (multi-select where asked), with an "Other…" entry
 * that opens an InputBox for a free-text answer. Any dismissal or a cancel from the sidecar → cancelled.
 */
import * as vscode from 'vscode';
import type { AskUserParams, AskUserQuestion, AskUserResult } from '../protocol';

export const OTHER_LABEL = 'Other…';

interface Item extends vscode.QuickPickItem {
  other?: boolean;
}

function askOne(q: AskUserQuestion, step: number, total: number, token?: vscode.CancellationToken): Promise<string[] | undefined> {
  return new Promise((resolve) => {
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = total > 1 ? `${q.header} (${step}/${total})` : q.header;
    qp.placeholder = q.question;
    qp.canSelectMany = q.multiSelect;
    qp.ignoreFocusOut = true;
    qp.matchOnDetail = true;
    qp.items = [
      ...q.options.map((o) => ({ label: o.label, detail: o.description })),
      { label: OTHER_LABEL, detail: 'Type your own answer', other: true },
    ];
    let done = false;
    const finish = (value: string[] | undefined): void => {
      if (done) return;
      done = true;
      resolve(value);
      qp.hide();
      qp.dispose();
    };
    const cancelSub = token?.onCancellationRequested(() => finish(undefined));
    qp.onDidAccept(async () => {
      const chosen = q.multiSelect ? [...qp.selectedItems] : qp.activeItems.slice(0, 1);
      if (chosen.length === 0) return;
      const labels = chosen.filter((i) => !i.other).map((i) => i.label);
      if (chosen.some((i) => i.other)) {
        done = true; // the QuickPick hides while the InputBox shows; that is not a dismissal
        qp.hide();
        const text = await vscode.window.showInputBox({
          title: q.header,
          prompt: q.question,
          placeHolder: 'Your answer',
          ignoreFocusOut: true,
        }, token);
        qp.dispose();
        cancelSub?.dispose();
        if (text === undefined || token?.isCancellationRequested) resolve(undefined);
        else resolve(text.trim() ? [...labels, text.trim()] : labels);
        return;
      }
      cancelSub?.dispose();
      finish(labels);
    });
    qp.onDidHide(() => finish(undefined));
    qp.show();
  });
}

export async function askUser(params: AskUserParams, token?: vscode.CancellationToken): Promise<AskUserResult> {
  const answers: Record<string, string[]> = {};
  const questions = params.questions ?? [];
  for (let i = 0; i < questions.length; i++) {
    const q = questions[i];
    const a = await askOne(q, i + 1, questions.length, token);
    if (a === undefined || token?.isCancellationRequested) return { outcome: 'cancelled', answers: {} };
    answers[q.question] = a;
  }
  return { outcome: 'answered', answers };
}
