// Starts code-server (installed by scripts/e2e-setup.sh into .e2e/) on loopback with a fresh user
// data dir, the RFT Studio .vsix installed, and Debian's chromium driven by playwright-core.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test as nodeTest, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { checkPidFile } from '../../backend/core/pid-file.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ENTRY = join(ROOT, '.e2e/node_modules/code-server/out/node/entry.js');
export const VSIX = join(ROOT, 'dist/rft-studio.vsix');
export const ARTIFACTS = join(ROOT, 'test-artifacts/e2e');
export const CHROMIUM = process.env.RFT_E2E_CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Session {
  url: string;
  page: Page;
  context: BrowserContext;
  server: ChildProcess;
  log: string[];
  shot(name: string): Promise<string>;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

export function requireSetup(): void {
  for (const f of [ENTRY, VSIX, CHROMIUM])
    if (!existsSync(f)) throw new Error(`${f} is missing: run scripts/e2e-setup.sh (npm run test:e2e does)`);
}

/** The session last started in this file: the one a failing test's screenshot is taken of. */
let current: Session | undefined;

type TestBody = (t: TestContext) => Promise<void>;
/**
 * node:test's `test`, plus: a failure prints its reason on one line as it happens (CI shows the lines
 * before a `not ok`, not the YAML block after it) and leaves a screenshot, `FAILED-<test>.png`.
 */
export function test(name: string, a: { timeout?: number; skip?: boolean | string } | TestBody, b?: TestBody): void {
  const [opts, body] = typeof a === 'function' ? [{}, a] : [a, b as TestBody];
  nodeTest(name, opts, async (t) => {
    try {
      await body(t);
    } catch (e) {
      const why = String((e as Error)?.message ?? e)
        .split('\n')
        .slice(0, 8)
        .join(' | ');
      console.log(`e2e FAILED: ${name}: ${why}`);
      const shot = await current?.shot(`FAILED-${name.replace(/[^\w-]+/g, '-').slice(0, 60)}`).catch(() => undefined);
      if (shot) console.log(`e2e FAILED: screenshot ${shot}`);
      throw e;
    }
  });
}

export async function startSession(workspace: string, userSettings: Record<string, unknown>): Promise<Session> {
  requireSetup();
  const base = mkdtempSync(join(tmpdir(), 'rft-e2e-'));
  const userData = join(base, 'user-data');
  const extensions = join(base, 'extensions');
  const config = join(base, 'config.yaml');
  mkdirSync(join(userData, 'User'), { recursive: true });
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify(userSettings, null, 2));
  writeFileSync(config, 'auth: none\ncert: false\n');
  const common = ['--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
  const inst = spawnSync(process.execPath, [ENTRY, ...common, '--install-extension', VSIX], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (inst.status !== 0 || !/successfully installed/.test(inst.stdout + inst.stderr))
    throw new Error(`installing the .vsix failed:\n${inst.stdout}\n${inst.stderr}`);

  const port = await freePort();
  const log: string[] = [];
  const server = spawn(
    process.execPath,
    [
      ENTRY,
      ...common,
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, XDG_CONFIG_HOME: join(base, 'xdg'), XDG_DATA_HOME: join(base, 'xdg-data') },
    },
  );
  server.stdout!.setEncoding('utf8').on('data', (d: string) => log.push(d));
  server.stderr!.setEncoding('utf8').on('data', (d: string) => log.push(d));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (server.exitCode !== null) throw new Error(`code-server exited:\n${log.join('')}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      /* not yet */
    }
    if (i > 600) throw new Error(`code-server did not come up:\n${log.join('')}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const context = await chromium.launchPersistentContext(join(base, 'chromium'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1440, height: 900 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${url}/?folder=${encodeURIComponent(workspace)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });
  mkdirSync(ARTIFACTS, { recursive: true });
  current = {
    url,
    page,
    context,
    server,
    log,
    async shot(name) {
      const file = join(ARTIFACTS, `${name}.png`);
      await page.screenshot({ path: file });
      return file;
    },
    async close() {
      await context.close().catch(() => undefined);
      server.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      if (server.exitCode === null) server.kill('SIGKILL');
      // The user data, the installed .vsix and chromium's profile: about 360 MB a session.
      rmSync(base, { recursive: true, force: true, maxRetries: 3 });
    },
  };
  return current;
}

/**
 * Opens the quick input with `key`, types `text` and picks the first row showing `row`; `done` waits
 * for what the pick opens. A key is now and then swallowed, or the input closed under us (focus moving
 * to a webview or notification that just opened): then it tries again, three times in all.
 */
async function pickFromQuickInput(
  page: Page,
  key: string,
  text: string,
  row: string,
  done?: () => Promise<unknown>,
): Promise<void> {
  const input = page.locator('.quick-input-widget input');
  for (let i = 0; ; i++) {
    try {
      if (i > 0) await page.keyboard.press('Escape');
      await page.keyboard.press(key);
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(text, { timeout: 10_000 });
      await page.locator('.quick-input-list .monaco-list-row', { hasText: row }).first().waitFor({ timeout: 30_000 });
      await page.keyboard.press('Enter');
      await done?.();
      return;
    } catch (e) {
      if (i === 2) throw e;
    }
  }
}

/** Runs a command from the palette (F1) by its title. */
export function runCommand(page: Page, title: string): Promise<void> {
  return pickFromQuickInput(page, 'F1', `>${title}`, title);
}

/** The user settings every e2e session starts with (dark theme, no tips, the test's own Node). */
export const E2E_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'security.workspace.trust.enabled': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'workbench.colorTheme': 'Default Dark Modern',
  'rftStudio.nodePath': process.execPath,
};

/** Polls `fn` every 500 ms until it returns something truthy (generous timeouts: the machine is shared). */
export async function until<T>(fn: () => T | Promise<T>, what: string, ms = 120_000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await (async () => fn())().catch(() => undefined);
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) {
      console.log(`e2e: timed out after ${ms / 1000} s waiting for ${what}`);
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Opens a workspace file in an editor through Go to File (Ctrl+P); done once its tab shows. */
export function openFile(page: Page, name: string): Promise<void> {
  const tab = page.locator('.tabs-container .tab', { hasText: name.split('/').pop()! }).first();
  return pickFromQuickInput(page, 'Control+P', name, name, () => tab.waitFor({ timeout: 30_000 }));
}

/** Shows the Problems panel; unlike "View: Toggle Problems" it never closes it when it is already open. */
export async function showProblems(page: Page): Promise<void> {
  await runCommand(page, 'Problems: Focus on Problems View');
  await page.locator('.markers-panel').waitFor({ state: 'visible', timeout: 30_000 });
}

/** The number on a sidebar row (`Usual experiences 3,360` -> 3360). */
export async function sidebarCount(page: Page, label: string): Promise<number> {
  const t = await page.locator('.monaco-list-row', { hasText: label }).first().innerText();
  return Number((/([\d,]+)\s*$/.exec(t.trim())?.[1] ?? 'NaN').replace(/,/g, ''));
}

/** Command -> visible result, printed for docs/extension.md (never asserted: the machine is shared). */
export function timing(figure: string, t0: number): void {
  console.log(JSON.stringify({ e2e: 'timing', figure, ms: Date.now() - t0 }));
}

/**
 * Never leave a run behind: SIGTERM to each run of the workspace still marked running, and only to
 * the process its run.pid proves to be that run's (core/pid-file.ts), never to whatever holds the pid now.
 */
export function stopLeftRuns(ws: string): void {
  const file = join(ws, '.rft', 'runs.json');
  if (!existsSync(file)) return;
  for (const r of (JSON.parse(readFileSync(file, 'utf8')) as { runs: { id: string; status: string; dir: string }[] })
    .runs) {
    if (r.status !== 'running') continue;
    const c = checkPidFile(join(r.dir, 'run.pid'), r.id);
    if (c.state === 'live') process.kill(c.pid, 'SIGTERM');
  }
}
