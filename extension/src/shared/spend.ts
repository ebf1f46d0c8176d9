/**
 * What a turn and the session cost, as the panel says it (the sidecar prices the usage: docs/model.md,
 * "Cost"). The words match the terminal client's turn summary line (sidecar/client/render.py `spend_line`).
 * Pure: the webview draws these, the unit tests check them.
 */

/** ACP's `Usage` (the prompt answer's `usage`). */
export interface Usage {
  totalTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  cachedReadTokens?: number;
  cachedWriteTokens?: number;
}

export interface Cost {
  amount: number;
  currency: string;
}

/** Tokens and, when every request had a price, their cost. */
export interface SpendTotal {
  usage?: Usage;
  cost?: Cost;
}

/** `_meta.sidecar.spend` of a prompt's answer (and the replayed `turnEnd.spend`). */
export interface Spend extends SpendTotal {
  session?: SpendTotal;
}

function count(n: number | undefined): string {
  const v = typeof n === 'number' && n > 0 ? n : 0;
  return v >= 1000 ? `${(v / 1000).toFixed(1)}k` : String(v);
}

/** Dollars: cents, or four places below a cent (`$0.0042`). */
export function money(c: Cost): string {
  const sign = c.currency === 'USD' ? '$' : `${c.currency} `;
  return c.amount >= 0.01 || c.amount === 0 ? `${sign}${c.amount.toFixed(2)}` : `${sign}${c.amount.toFixed(4)}`;
}

function isCost(v: unknown): v is Cost {
  return typeof v === 'object' && v !== null && typeof (v as Cost).amount === 'number' && typeof (v as Cost).currency === 'string';
}

/** The turn footer: `1.0k in · 200 out · 10.0k cache read · 2.0k cache write · $0.02`; null without usage. */
export function turnSpendText(spend: Spend | undefined): string | null {
  const u = spend?.usage;
  if (!u || typeof u !== 'object') return null;
  const parts = [`${count(u.inputTokens)} in`, `${count(u.outputTokens)} out`];
  if (u.cachedReadTokens) parts.push(`${count(u.cachedReadTokens)} cache read`);
  if (u.cachedWriteTokens) parts.push(`${count(u.cachedWriteTokens)} cache write`);
  parts.push(isCost(spend.cost) ? money(spend.cost) : 'no price for this model');
  return parts.join(' · ');
}

/** The session's total beside the context meter: its cost, or its tokens for a model without a price. */
export function sessionSpendText(total: SpendTotal | undefined): { text: string; title: string } | null {
  if (!total || typeof total !== 'object') return null;
  const tokens = total.usage?.totalTokens;
  if (isCost(total.cost)) {
    return {
      text: money(total.cost),
      title: `This session so far: ${money(total.cost)}${typeof tokens === 'number' ? ` (${count(tokens)} tokens)` : ''}`,
    };
  }
  if (typeof tokens !== 'number') return null;
  return { text: `${count(tokens)} tokens`, title: 'This session so far (no price for this model: tokens only)' };
}
