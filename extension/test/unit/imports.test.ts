// The extension's modules import each other without a circle (type-only imports included: the webview's
// `ContextItem` once made main.ts ↔ composer.ts one). tests/test_architecture.py checks the same of sidecar/.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(__dirname, '../../src');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The modules of src/ that `file` imports (relative specifiers only; packages are not ours). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"](\.[^'"]+)['"]|^\s*import\s*['"](\.[^'"]+)['"]/gm)) {
    const spec = m[1] ?? m[2];
    if (!spec) continue;
    const base = path.resolve(path.dirname(file), spec);
    const target = [`${base}.ts`, path.join(base, 'index.ts')].find((p) => fs.existsSync(p));
    if (target) out.push(target);
  }
  return out;
}

/** Strongly connected components with more than one module (or a module importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, idx.get(w) ?? 0));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        on.delete(w);
        comp.push(path.relative(SRC, w));
      } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

describe('extension/src imports', () => {
  const graph = new Map(sources(SRC).map((f) => [f, importsOf(f)]));

  it('reads the imports it checks', () => {
    expect(graph.get(path.join(SRC, 'webview/main.ts'))).toContain(path.join(SRC, 'webview/composer.ts'));
    expect(graph.get(path.join(SRC, 'webview/composer.ts'))).toContain(path.join(SRC, 'shared/panelProtocol.ts'));
  });

  it('has no import circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    expect(circles(new Map([['/a', ['/b']], ['/b', ['/a']], ['/c', []]]))).toHaveLength(1);
  });

  it('keeps the webview off the host: webview/ and shared/ import only webview/ and shared/', () => {
    for (const [file, deps] of graph) {
      const rel = path.relative(SRC, file);
      if (!rel.startsWith('webview/') && !rel.startsWith('shared/')) continue;
      for (const d of deps) expect(path.relative(SRC, d), `${rel} imports it`).toMatch(/^(webview|shared)\//);
    }
  });
});
