// A run config as the views read it: a config that does not parse now (one mistyped indent while
// typing) keeps its last good reading, marked stale, instead of reading as no config at all (which
// re-judged its data files without their mapping and told the model card no config uses the model).
import YAML from 'yaml';

const good = new Map<string, unknown>();

/** The parsed config; when `text` does not parse, the last text of `file` that did (`stale`), else undefined. */
export function parseLastGood(file: string, text: string): { doc: unknown; stale: boolean } {
  try {
    const doc = YAML.parse(text) as unknown;
    good.set(file, doc);
    return { doc, stale: false };
  } catch {
    return { doc: good.get(file), stale: good.has(file) };
  }
}
