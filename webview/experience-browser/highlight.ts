// Search matches marked in the text they were found in (the list's response, the detail's prompt
// and response): <mark> around each case-insensitive occurrence of the text filter.

/** The text as nodes: plain runs and <mark>s around each match of `query` (none: one text node). */
export function markMatches(doc: Document, text: string, query: string | undefined): Node[] {
  const q = query?.toLowerCase();
  if (!q) return [doc.createTextNode(text)];
  const out: Node[] = [];
  const low = text.toLowerCase();
  let at = 0;
  for (let i = low.indexOf(q); i >= 0; i = low.indexOf(q, i + q.length)) {
    if (i > at) out.push(doc.createTextNode(text.slice(at, i)));
    const m = doc.createElement('mark');
    m.textContent = text.slice(i, i + q.length);
    out.push(m);
    at = i + q.length;
  }
  if (at < text.length) out.push(doc.createTextNode(text.slice(at)));
  return out;
}
