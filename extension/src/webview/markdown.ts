/**
 * Markdown for the chat: markdown-it with raw HTML off (the model's text is never trusted as HTML), code
 * fences highlighted by highlight.js (core + a fixed set of languages, bundled: no remote resources), each
 * block in a scrolling frame with a language label and a copy button, tables in a scrolling wrapper.
 */
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import csharp from 'highlight.js/lib/languages/csharp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import kotlin from 'highlight.js/lib/languages/kotlin';
import markdown from 'highlight.js/lib/languages/markdown';
import php from 'highlight.js/lib/languages/php';
import python from 'highlight.js/lib/languages/python';
import ruby from 'highlight.js/lib/languages/ruby';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import swift from 'highlight.js/lib/languages/swift';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import ini from 'highlight.js/lib/languages/ini';
import MarkdownIt from 'markdown-it';

const LANGS = { bash, c, cpp, csharp, css, diff, go, java, javascript, json, kotlin, markdown, php, python, ruby, rust, shell, sql, swift, typescript, xml, yaml, ini };
for (const [name, lang] of Object.entries(LANGS)) hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['toml'], { languageName: 'ini' });

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Highlighted HTML for `code` (escaped plain text when the language is unknown or the block is huge). */
export function highlight(code: string, lang: string | undefined): string {
  const name = (lang ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  if (code.length > 200_000) return escape(code);
  try {
    if (name && hljs.getLanguage(name)) return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  } catch {
    /* fall through */
  }
  return escape(code);
}

/** Language for a file name, for highlighting file contents in cards. */
export function langOfPath(path: string): string | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  if (!ext) return undefined;
  const map: Record<string, string> = { rs: 'rust', rb: 'ruby', kt: 'kotlin', cs: 'csharp', h: 'c', hpp: 'cpp', cc: 'cpp', yml: 'yaml', md: 'markdown', htm: 'xml' };
  const name = map[ext] ?? ext;
  return hljs.getLanguage(name) ? name : undefined;
}

export const md: MarkdownIt = new MarkdownIt({ html: false, linkify: false, breaks: false });

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  if (!token) return '';
  const lang = token.info.trim().split(/\s+/)[0] ?? '';
  const label = lang ? `<span class="code-lang">${escape(lang)}</span>` : '';
  return (
    `<div class="code-block">` +
    `<div class="code-head">${label}<button class="copy-code secondary" title="Copy code">Copy</button></div>` +
    `<pre><code class="hljs${lang ? ` language-${escape(lang)}` : ''}">${highlight(token.content, lang)}</code></pre></div>\n`
  );
};
md.renderer.rules.table_open = () => '<div class="table-wrap"><table>\n';
md.renderer.rules.table_close = () => '</table></div>\n';
