import { describe, expect, it } from 'vitest';
import { money, sessionSpendText, turnSpendText } from '../../src/shared/spend';
import { turnEndView } from '../../src/webview/replay';

const usage = { totalTokens: 13_200, inputTokens: 1000, outputTokens: 200, cachedReadTokens: 10_000, cachedWriteTokens: 2000 };

describe('what a turn and the session cost, as the panel says it', () => {
  it('the turn footer names the tokens and the cost, as the terminal client does', () => {
    const spend = { usage, cost: { amount: 0.0165, currency: 'USD' }, session: { usage, cost: { amount: 0.033, currency: 'USD' } } };
    expect(turnSpendText(spend)).toBe('1.0k in · 200 out · 10.0k cache read · 2.0k cache write · $0.02');
    expect(turnEndView({ stopReason: 'end_turn', spend })).toEqual({ reason: 'end_turn', cost: '1.0k in · 200 out · 10.0k cache read · 2.0k cache write · $0.02' });
    expect(turnEndView({ stopReason: 'cancelled', spend }).cost).toBe(turnSpendText(spend));
  });

  it('a model without a price shows tokens only; a turn without usage shows nothing', () => {
    const tokensOnly = { usage: { inputTokens: 5, outputTokens: 7, totalTokens: 12 }, session: { usage: { totalTokens: 13_212 } } };
    expect(turnSpendText(tokensOnly)).toBe('5 in · 7 out · no price for this model');
    expect(sessionSpendText(tokensOnly.session)).toEqual({ text: '13.2k tokens', title: 'This session so far (no price for this model: tokens only)' });
    expect(turnSpendText(undefined)).toBeNull();
    expect(turnEndView({ stopReason: 'end_turn' })).toEqual({ reason: 'end_turn' });
  });

  it('amounts under a cent keep four places; the session total says its tokens in the tooltip', () => {
    expect(money({ amount: 0.0042, currency: 'USD' })).toBe('$0.0042');
    expect(money({ amount: 0, currency: 'USD' })).toBe('$0.00');
    expect(money({ amount: 12.345, currency: 'USD' })).toBe('$12.35');
    expect(money({ amount: 1, currency: 'EUR' })).toBe('EUR 1.00');
    expect(sessionSpendText({ usage, cost: { amount: 0.033, currency: 'USD' } })).toEqual({ text: '$0.03', title: 'This session so far: $0.03 (13.2k tokens)' });
  });
});
