/**
 * Hunk arithmetic for the review editor, on the sidecar's hunk numbers (unified-diff headers: 1-based;
 * a side with 0 lines starts at the line *before* the hunk, as GNU diff writes it).
 */
import type { Hunk } from './protocol';

/** Lines with their endings kept, so CRLF and a missing final newline survive a round trip. */
export function splitLines(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      out.push(text.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

function sliceStart(start: number, count: number): number {
  return count === 0 ? start : start - 1;
}

/** `newText` with the given hunks turned back into their `oldText` lines. */
export function revertHunks(oldText: string | null, newText: string, hunks: Hunk[], rejected: ReadonlySet<number>): string {
  const lines = splitLines(newText);
  const old = splitLines(oldText ?? '');
  const todo = hunks.filter((h) => rejected.has(h.index)).sort((a, b) => b.newStart - a.newStart);
  for (const h of todo) {
    const n = sliceStart(h.newStart, h.newLines);
    const o = sliceStart(h.oldStart, h.oldLines);
    lines.splice(n, h.newLines, ...old.slice(o, o + h.oldLines));
  }
  return lines.join('');
}

/** 0-based line where hunk `index` begins in the proposal after the `rejected` hunks were reverted. */
export function hunkLine(hunks: Hunk[], rejected: ReadonlySet<number>, index: number): number {
  const h = hunks.find((x) => x.index === index);
  if (!h) return 0;
  let shift = 0;
  for (const other of hunks) {
    if (other.newStart < h.newStart && rejected.has(other.index)) shift += other.oldLines - other.newLines;
  }
  return Math.max(0, sliceStart(h.newStart, h.newLines) + shift);
}

/** The first line of the hunk that really changes (skipping the leading context lines), 0-based. */
export function firstChangedLine(oldText: string | null, newText: string, h: Hunk): number {
  const old = splitLines(oldText ?? '');
  const cur = splitLines(newText);
  const o = sliceStart(h.oldStart, h.oldLines);
  const n = sliceStart(h.newStart, h.newLines);
  let k = 0;
  while (k < h.oldLines && k < h.newLines && old[o + k] === cur[n + k]) k++;
  return k;
}
