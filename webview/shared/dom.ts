// Tiny DOM helpers for the webviews (no framework: the pages are small and must paint fast).
export function h<K extends string>(
  doc: Document,
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: (Node | string | null | undefined)[]
): HTMLElement {
  const el = doc.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'class') el.className = String(v);
    else if (k === 'text') el.textContent = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

/** Value of a native input or a vscode-elements field (both expose `.value`). */
export function fieldValue(el: Element | null): string {
  const v = (el as unknown as { value?: unknown } | null)?.value;
  return typeof v === 'string' ? v : (el?.getAttribute('value') ?? '');
}

export function setValue(el: Element | null, v: string): void {
  if (!el) return;
  (el as unknown as { value: string }).value = v;
  el.setAttribute('value', v);
}

export function checked(el: Element | null): boolean {
  return !!(el as unknown as { checked?: boolean } | null)?.checked;
}
