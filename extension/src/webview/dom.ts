/** The webview's two DOM helpers: an element with a class and text, and an element of the page by id. */

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** An element of chatView.ts's page; the page is ours, so a missing id is a bug (thrown at start-up). */
export function byId<K extends keyof HTMLElementTagNameMap>(id: string, tag: K): HTMLElementTagNameMap[K] {
  const e = document.getElementById(id);
  if (!e || e.tagName.toLowerCase() !== tag) throw new Error(`the panel has no <${tag} id="${id}">`);
  return e as HTMLElementTagNameMap[K];
}
