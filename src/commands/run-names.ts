// Names generated configs must not reuse: every run's name and the `name:` of every workspace config,
// so a new `name:` (templates.ts templateRunName) tells its runs apart from the others'.
import * as vscode from 'vscode';
import type { RunInfo } from '../../backend/core/protocol.js';

const CONFIGS = '**/*.rft.{yaml,yml}';

export async function takenRunNames(runs: readonly RunInfo[]): Promise<Set<string>> {
  const taken = new Set<string>();
  for (const r of runs) if (r.name) taken.add(r.name);
  const configs = await Promise.resolve(vscode.workspace.findFiles(CONFIGS, '**/node_modules/**', 200)).catch(() => []);
  for (const u of configs) {
    try {
      const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
      const m = /^name:\s*["']?([^"'#\n]+?)["']?\s*(#.*)?$/m.exec(text);
      if (m) taken.add(m[1]!);
    } catch {
      // unreadable: it names nothing
    }
  }
  return taken;
}
