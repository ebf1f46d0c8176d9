/**
 * Whether a path lies in a workspace root, and where, compared as paths and not as strings; the extension
 * host and the webview share it (the webview has no `node:path`). `\` and `/` both separate, `.`, `..`
 * and repeated or trailing separators do not count, and a Windows path (a drive letter, or UNC
 * `\\server\share`) compares case-insensitively, as its file system does. A string prefix test said
 * `/w/shopping` was in `/w/shop`, and that no `C:\w\src\a.ts` was in `C:\w` (it looked for `C:\w/`).
 */

interface Parsed {
  /** `/` (POSIX absolute), `//` (UNC) or `` (a drive path, or a relative one) */
  lead: string;
  segments: string[];
  /** the segments as compared (lower case on Windows) */
  keys: string[];
}

function parse(p: string): Parsed {
  const lead = /^[\\/]{2}(?![\\/])/.test(p) ? '//' : /^[\\/]/.test(p) ? '/' : '';
  const segments: string[] = [];
  for (const s of p.split(/[\\/]+/)) {
    if (s === '' || s === '.') continue;
    if (s === '..') {
      // never above a drive (C:\..\x is C:\x)
      if (segments.length && !/^[A-Za-z]:$/.test(segments[segments.length - 1] ?? '')) segments.pop();
      continue;
    }
    segments.push(s);
  }
  const windows = lead === '//' || /^[A-Za-z]:$/.test(segments[0] ?? '');
  return { lead, segments, keys: windows ? segments.map((s) => s.toLowerCase()) : segments };
}

/**
 * `p` relative to the first of `roots` that holds it, with `/` between segments (`''` for a root itself);
 * null when it is in none of them. A blank root holds nothing.
 */
export function relativeTo(p: string, roots: readonly string[]): string | null {
  const path = parse(p);
  for (const r of roots) {
    if (!r.trim()) continue;
    const root = parse(r);
    if (root.lead !== path.lead || root.keys.length > path.keys.length) continue;
    if (root.keys.every((k, i) => k === path.keys[i])) return path.segments.slice(root.keys.length).join('/');
  }
  return null;
}

/** Whether `p` is one of `roots` or inside one. */
export function insideRoots(p: string, roots: readonly string[]): boolean {
  return relativeTo(p, roots) !== null;
}
