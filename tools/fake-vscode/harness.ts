// Activates the real extension against the fake VS Code API, with a real `rft serve` backend.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import './setup.js';
import { ROOT } from '../spawn-serve.js';
// Removed when the test file's process exits: a test may read them until then.
import { tempDirUntilExit } from '../../backend/core/temp-dir.js';

const vscode = await import('./fake-vscode.js');
const ext = await import('../../src/extension.js');
export { vscode, ext };

export const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  contributes: { commands: { command: string }[] };
  activationEvents: string[];
};

/** An extension folder whose dist/backend/serve.mjs runs backend/serve.ts from this checkout (through tsx). */
export function extensionDir(): string {
  const dir = tempDirUntilExit('rft-ext-');
  mkdirSync(join(dir, 'dist', 'backend'), { recursive: true });
  writeFileSync(
    join(dir, 'dist', 'backend', 'serve.mjs'),
    [
      `const { register } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/tsx/dist/esm/api/index.mjs')).href)});`,
      'register();',
      `await import(${JSON.stringify(pathToFileURL(join(ROOT, 'backend/serve.ts')).href)});`,
    ].join('\n'),
  );
  return dir;
}

export function workspaceDir(files: Record<string, string>): string {
  const dir = tempDirUntilExit('rft-ws-');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

export function fakeContext(extensionPath: string) {
  return {
    subscriptions: [] as { dispose(): unknown }[],
    extensionPath,
    extensionUri: vscode.Uri.file(extensionPath),
    extension: { packageJSON: PACKAGE },
    workspaceState: memento(),
  };
}

/** An in-memory Memento (context.workspaceState). */
function memento() {
  const m = new Map<string, unknown>();
  return {
    get: <T>(k: string, d?: T): T | undefined => (m.has(k) ? (m.get(k) as T) : d),
    update: async (k: string, v: unknown) => void (v === undefined ? m.delete(k) : m.set(k, v)),
    keys: () => [...m.keys()],
  };
}

export async function until<T>(fn: () => T | Promise<T>, what: string, ms = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Opens `ws` as the only workspace folder and activates the extension with a real backend; resolves once it runs. */
export async function activateWith(ws: string) {
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  vscode.settings.set('rftStudio.nodePath', process.execPath);
  const ctx = fakeContext(extensionDir());
  const api = (await ext.activate(ctx as never)) as import('../../src/extension.js').StudioApi;
  await until(() => api.services!.client.state === 'running', 'backend running');
  return { ctx, api };
}

export async function deactivateFrom(ctx: ReturnType<typeof fakeContext>): Promise<void> {
  await ext.deactivate();
  for (const d of ctx.subscriptions) d.dispose();
}
