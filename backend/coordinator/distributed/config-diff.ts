// The fields two run configs differ in, as dotted paths (`stages[1].steps`): a coordinator re-run
// with another config than the run's stored one says which fields differ instead of a bare
// `"created": false` (issue 24).
export function configDiff(a: unknown, b: unknown, path = '', out: string[] = []): string[] {
  if (Object.is(a, b)) return out;
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path || '(root)'} (${a.length} vs ${b.length} items)`);
    else a.forEach((x, i) => configDiff(x, b[i], `${path}[${i}]`, out));
    return out;
  }
  if (isObj(a) && isObj(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort())
      configDiff(a[k], b[k], path ? `${path}.${k}` : k, out);
    return out;
  }
  out.push(path || '(root)');
  return out;
}
