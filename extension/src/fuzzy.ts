/**
 * Fuzzy matching of workspace paths for the composer's `@` completion. Runs in the extension host over the
 * cached file list: one pass per candidate, no allocation per character, so a 100k-file workspace answers a
 * keystroke in a few milliseconds. Pure (no `vscode`), unit-tested.
 */

/**
 * Score of `query` against `path` (higher is better), or -1 when the query's characters are not all in the
 * path in order. Matches in the file name, at word starts and in runs count more; shorter paths win ties.
 */
export function fuzzyScore(query: string, path: string, lower?: string): number {
  if (!query) return 1000 - path.length;
  return scoreLower(query.toLowerCase(), lower ?? path.toLowerCase());
}

function scoreLower(q: string, p: string): number {
  const path = p;
  // Quick reject: the last query character must occur after the first one's first occurrence.
  const first = p.indexOf(q[0] as string);
  if (first < 0 || p.lastIndexOf(q[q.length - 1] as string) < first) return -1;
  const base = p.lastIndexOf('/', p.length - 2) + 1;
  // A plain substring of the file name is the best kind of match.
  const inName = p.indexOf(q, base);
  if (inName >= 0) return 10000 - (inName === base ? 0 : 500) - path.length;
  const inPath = p.indexOf(q);
  if (inPath >= 0) return 5000 - path.length;
  let score = 0;
  let qi = 0;
  let prev = -2;
  for (let i = 0; i < p.length && qi < q.length; i++) {
    if (p.charCodeAt(i) !== q.charCodeAt(qi)) continue;
    let s = 1;
    if (i === prev + 1) s += 5;
    const before = i === 0 ? '/' : p[i - 1];
    if (before === '/' || before === '_' || before === '-' || before === '.' || before === ' ') s += 8;
    if (i >= base) s += 3;
    score += s;
    prev = i;
    qi++;
  }
  if (qi < q.length) return -1;
  return score * 10 - path.length;
}

export interface PathEntry {
  path: string;
  isFolder: boolean;
  /** `path` lower-cased once (saves an allocation per candidate per keystroke) */
  lower?: string;
}

/** The best `limit` entries for `query`, best first. */
export function fuzzyFilter(query: string, entries: readonly PathEntry[], limit = 50): PathEntry[] {
  const scored: { e: PathEntry; s: number }[] = [];
  let floor = -Infinity;
  const q = query.toLowerCase();
  for (const e of entries) {
    const s = q ? scoreLower(q, e.lower ?? e.path.toLowerCase()) : 1000 - e.path.length;
    if (s < 0 || (scored.length >= limit && s <= floor)) continue;
    scored.push({ e, s });
    if (scored.length > limit * 4) {
      scored.sort((a, b) => b.s - a.s);
      scored.length = limit;
      floor = scored[scored.length - 1]?.s ?? -Infinity;
    }
  }
  scored.sort((a, b) => b.s - a.s || a.e.path.localeCompare(b.e.path));
  return scored.slice(0, limit).map((x) => x.e);
}

/** Files plus every folder above them (folders end with "/"). */
export function withFolders(files: readonly string[]): PathEntry[] {
  const folders = new Set<string>();
  for (const f of files) {
    for (let i = f.indexOf('/'); i >= 0; i = f.indexOf('/', i + 1)) folders.add(f.slice(0, i + 1));
  }
  const entry = (path: string, isFolder: boolean): PathEntry => ({ path, isFolder, lower: path.toLowerCase() });
  return [...files.map((path) => entry(path, false)), ...[...folders].map((path) => entry(path, true))];
}
