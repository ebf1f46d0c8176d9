// What waits for the user, counted per session: each chat (the side bar's, an editor tab's) shows its own.
import { describe, expect, it } from 'vitest';
import { Pending } from '../../src/pending';

describe('pending requests by session', () => {
  it('counts each session apart and the whole, and forgets a session once nothing of it waits', async () => {
    const pending = new Pending();
    const seen: number[] = [];
    pending.onDidChange((n) => seen.push(n));
    let answerTab!: () => void;
    const tab = pending.track(() => new Promise<void>((r) => (answerTab = r)), 'S-tab');
    let answerView!: () => void;
    const view = pending.track(() => new Promise<void>((r) => (answerView = r)), 'S-view');
    expect([pending.size, pending.sizeOf('S-tab'), pending.sizeOf('S-view'), pending.sizeOf(null)]).toEqual([2, 1, 1, 0]);
    answerTab();
    await tab;
    expect([pending.size, pending.sizeOf('S-tab'), pending.sizeOf('S-view')]).toEqual([1, 0, 1]);
    answerView();
    await view;
    await expect(pending.track(() => Promise.reject(new Error('no')), 'S-view')).rejects.toThrow('no');
    expect([pending.size, pending.sizeOf('S-view')]).toEqual([0, 0]);
    expect(seen).toEqual([1, 2, 1, 0, 1, 0]);
  });
});
