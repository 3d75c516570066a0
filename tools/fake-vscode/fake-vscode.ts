// A fake of the VS Code API surface the extension uses, with recorders the tests assert on.
// Files are real (workspace.fs and findFiles work on disk); UI answers are queued by the test.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';

// ------------------------------------------------------------------ basics
export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...ds: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => ds.forEach((d) => d.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners = new Set<(e: T) => unknown>();
  readonly event = (l: (e: T) => unknown): Disposable => {
    this.listeners.add(l);
    return new Disposable(() => this.listeners.delete(l));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', resolvePath(p));
  }
  static parse(s: string): Uri {
    const u = new URL(s);
    return new Uri(u.protocol.replace(/:$/, ''), decodeURIComponent(u.pathname));
  }
  static joinPath(base: Uri, ...segs: string[]): Uri {
    return new Uri(base.scheme, join(base.path, ...segs));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
  with(change: { scheme?: string; path?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, change.path ?? this.path);
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(sl: number, sc: number, el: number, ec: number) {
    this.start = new Position(sl, sc);
    this.end = new Position(el, ec);
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}
export class Selection extends Range {}

export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}
export class Diagnostic {
  source?: string;
  constructor(
    readonly range: Range,
    readonly message: string,
    readonly severity: DiagnosticSeverity = DiagnosticSeverity.Error,
  ) {}
}
export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}
export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  iconPath?: unknown;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  label?: string;
  resourceUri?: Uri;
  constructor(
    labelOrUri: string | Uri,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {
    if (typeof labelOrUri === 'string') this.label = labelOrUri;
    else this.resourceUri = labelOrUri;
  }
}
export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}
export class ThemeColor {
  constructor(readonly id: string) {}
}
export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}
export enum QuickPickItemKind {
  Separator = -1,
  Default = 0,
}
export enum ViewColumn {
  Active = -1,
  One = 1,
}

// ------------------------------------------------------------------ recorders the tests read
export interface Shown {
  kind: 'error' | 'warning' | 'info';
  message: string;
  items: string[];
  /** The options' modal and detail, when given. */
  modal?: boolean;
  detail?: string;
  /** A MessageItem marked isCloseAffordance (the dialog's Cancel; first in items = the default button). */
  closeAffordance?: string;
  /** Shown while a withProgress task was still running (its progress notification still on screen). */
  duringProgress?: true;
}
export const recorded = {
  messages: [] as Shown[],
  executed: [] as { command: string; args: unknown[] }[],
  log: [] as { level: string; line: string }[],
  /** Every progress.report() of a withProgress task, in order. */
  progress: [] as { message?: string; increment?: number }[],
  panels: [] as FakeWebviewPanel[],
  /** WebviewPanelSerializers by view type (a window reload restores panels through them). */
  serializers: new Map<string, { deserializeWebviewPanel(panel: unknown, state: unknown): Thenable<void> }>(),
  statusItems: [] as FakeStatusBarItem[],
  treeViews: new Map<string, FakeTreeView>(),
  diagnostics: new Map<string, FakeDiagnosticCollection>(),
  /** Options of every quick pick, input box and file dialog shown, in order. */
  clipboard: '',
  /** Terminals created, with the text sent to each. */
  terminals: [] as { name?: string; sent: string[]; shown: boolean }[],
  prompts: [] as {
    kind: 'quickPick' | 'inputBox' | 'openDialog' | 'saveDialog';
    options: Record<string, unknown>;
    itemsPending?: boolean;
  }[],
};
export const FileType = { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 } as const;
/** Answers the next prompts: each entry is taken in order by the matching prompt kind. */
export const answers = {
  message: [] as (string | undefined)[],
  quickPick: [] as ((items: { label: string }[] | string[]) => unknown)[],
  inputBox: [] as (string | undefined)[],
  openDialog: [] as (Uri[] | undefined)[],
  saveDialog: [] as (Uri | undefined)[],
};
export const settings = new Map<string, unknown>();
const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
/** Changes a setting and tells listeners, as the settings editor would. */
export function changeSetting(key: string, value: unknown): void {
  settings.set(key, value);
  configChanged.fire({ affectsConfiguration: (section) => key === section || key.startsWith(`${section}.`) });
}

export function resetFake(): void {
  recorded.messages.length = 0;
  recorded.executed.length = 0;
  recorded.log.length = 0;
  recorded.progress.length = 0;
  recorded.panels.length = 0;
  recorded.serializers.clear();
  recorded.statusItems.length = 0;
  recorded.treeViews.clear();
  recorded.diagnostics.clear();
  recorded.prompts.length = 0;
  recorded.clipboard = '';
  recorded.terminals.length = 0;
  externalCommands.clear();
  fileWatchers.length = 0;
  for (const k of Object.keys(answers) as (keyof typeof answers)[]) answers[k].length = 0;
  settings.clear();
  commandsRegistry.clear();
  workspace.isTrusted = true;
  workspace.workspaceFolders = undefined;
  workspace.textDocuments.length = 0;
  window.activeTextEditor = undefined;
}

// ------------------------------------------------------------------ window
class FakeOutputChannel {
  constructor(readonly name: string) {}
  private at(level: string) {
    return (line: string) => void recorded.log.push({ level, line });
  }
  trace = this.at('trace');
  debug = this.at('debug');
  info = this.at('info');
  warn = this.at('warn');
  error = this.at('error');
  appendLine = this.at('info');
  show(): void {
    recorded.executed.push({ command: '(output.show)', args: [this.name] });
  }
  dispose(): void {}
}

export class FakeStatusBarItem {
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  name: string | undefined;
  visible = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {}
}

export class FakeTreeView {
  badge: { value: number; tooltip: string } | undefined;
  description: string | undefined;
  constructor(
    readonly id: string,
    readonly provider: {
      getChildren(e?: unknown): unknown;
      getTreeItem(e: unknown): TreeItem;
      onDidChangeTreeData?: (l: () => void) => Disposable;
    },
  ) {}
  async items(): Promise<TreeItem[]> {
    const kids = (await this.provider.getChildren()) as unknown[];
    return Promise.all(kids.map((k) => this.provider.getTreeItem(k)));
  }
  dispose(): void {}
}

export class FakeWebview {
  html = '';
  cspSource = 'https://fake.vscode-cdn.net';
  readonly posted: unknown[] = [];
  readonly received = new EventEmitter<unknown>();
  readonly onDidReceiveMessage = this.received.event;
  constructor(public options: unknown) {}
  asWebviewUri(u: Uri): Uri {
    return u.with({ scheme: 'https' });
  }
  async postMessage(m: unknown): Promise<boolean> {
    this.posted.push(m);
    return true;
  }
}

export class FakeWebviewPanel {
  readonly webview: FakeWebview;
  private readonly disposeEmitter = new EventEmitter<void>();
  readonly onDidDispose = this.disposeEmitter.event;
  revealed = 0;
  disposed = false;
  constructor(
    readonly viewType: string,
    readonly title: string,
    readonly column: unknown,
    readonly options: { enableScripts?: boolean; retainContextWhenHidden?: boolean; localResourceRoots?: Uri[] },
  ) {
    this.webview = new FakeWebview(options);
  }
  /** A panel as VS Code restores it after a window reload (handed to the view type's serializer). */
  static restored(viewType: string, title: string): FakeWebviewPanel {
    return new FakeWebviewPanel(viewType, title, 1, {});
  }
  reveal(): void {
    this.revealed++;
  }
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.disposeEmitter.fire();
  }
}

class FakeDiagnosticCollection {
  readonly entries = new Map<string, Diagnostic[]>();
  constructor(readonly name: string) {}
  set(uri: Uri, ds: Diagnostic[]): void {
    this.entries.set(uri.fsPath, ds);
  }
  get(uri: Uri): Diagnostic[] | undefined {
    return this.entries.get(uri.fsPath);
  }
  delete(uri: Uri): void {
    this.entries.delete(uri.fsPath);
  }
  forEach(f: (uri: Uri, ds: Diagnostic[]) => void): void {
    for (const [p, ds] of this.entries) f(Uri.file(p), ds);
  }
  clear(): void {
    this.entries.clear();
  }
  dispose(): void {}
}

let progressOpen = 0;

function message(kind: Shown['kind']) {
  return async (msg: string, ...items: unknown[]) => {
    // Items are strings or MessageItems ({ title, isCloseAffordance }); the options are the object without a title.
    type Item = { title: string; isCloseAffordance?: boolean };
    const isItem = (i: unknown): i is Item => !!i && typeof i === 'object' && 'title' in i;
    const choices = items.filter((i): i is string | Item => typeof i === 'string' || isItem(i));
    const labels = choices.map((i) => (typeof i === 'string' ? i : i.title));
    const opts = items.find(
      (i): i is { modal?: boolean; detail?: string } => !!i && typeof i === 'object' && !isItem(i),
    );
    const close = choices.find((i): i is Item => isItem(i) && !!i.isCloseAffordance);
    recorded.messages.push({
      kind,
      message: msg,
      items: labels,
      ...(opts?.modal ? { modal: true } : {}),
      ...(opts?.detail ? { detail: opts.detail } : {}),
      ...(close ? { closeAffordance: close.title } : {}),
      ...(progressOpen > 0 ? { duringProgress: true } : {}),
    });
    const answer = answers.message.length ? answers.message.shift() : undefined;
    // An answer by title returns that item, as VS Code returns the MessageItem clicked.
    return choices.find((i) => isItem(i) && i.title === answer) ?? answer;
  };
}

export interface FakeTextDocument {
  uri: Uri;
  isDirty: boolean;
  lineCount: number;
  getText(r?: Range): string;
  lineAt(n: number): { text: string };
}

export function textDocument(uri: Uri, text: string, isDirty = false): FakeTextDocument {
  const lines = text.split('\n');
  return {
    uri,
    isDirty,
    get lineCount() {
      return lines.length;
    },
    getText(r?: Range) {
      if (!r) return text;
      const sel = lines.slice(r.start.line, r.end.line + 1);
      if (sel.length === 1) return sel[0]!.slice(r.start.character, r.end.character);
      sel[0] = sel[0]!.slice(r.start.character);
      sel[sel.length - 1] = sel[sel.length - 1]!.slice(0, r.end.character);
      return sel.join('\n');
    },
    lineAt: (n: number) => ({ text: lines[n] ?? '' }),
  };
}

export const window = {
  createTerminal(o: { name?: string } = {}) {
    const t = { name: o.name, sent: [] as string[], shown: false };
    recorded.terminals.push(t);
    return {
      show: () => void (t.shown = true),
      sendText: (text: string) => void t.sent.push(text),
      dispose() {},
    };
  },
  activeTextEditor: undefined as undefined | { document: FakeTextDocument; selection: Selection },
  createOutputChannel: (name: string) => new FakeOutputChannel(name),
  showErrorMessage: message('error'),
  showWarningMessage: message('warning'),
  showInformationMessage: message('info'),
  async showQuickPick(items: unknown[] | Promise<unknown[]>, options: Record<string, unknown> = {}) {
    // itemsPending: the list opened before its items were known (VS Code shows it busy meanwhile).
    recorded.prompts.push({ kind: 'quickPick', options, itemsPending: items instanceof Promise });
    const list = (await items) as { label: string }[];
    const f = answers.quickPick.shift();
    return f ? f(list) : undefined;
  },
  async showInputBox(o?: { validateInput?(v: string): string | undefined }) {
    recorded.prompts.push({ kind: 'inputBox', options: (o ?? {}) as Record<string, unknown> });
    const v = answers.inputBox.shift();
    if (v !== undefined && o?.validateInput?.(v)) return undefined;
    return v;
  },
  async showOpenDialog(options: Record<string, unknown> = {}) {
    recorded.prompts.push({ kind: 'openDialog', options });
    return answers.openDialog.shift();
  },
  async showSaveDialog(options: Record<string, unknown> = {}) {
    recorded.prompts.push({ kind: 'saveDialog', options });
    return answers.saveDialog.shift();
  },
  async showTextDocument(u: Uri) {
    recorded.executed.push({ command: '(showTextDocument)', args: [u.fsPath] });
    return undefined;
  },
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number) {
    const s = new FakeStatusBarItem(id, alignment, priority);
    recorded.statusItems.push(s);
    return s;
  },
  createTreeView(id: string, o: { treeDataProvider: FakeTreeView['provider'] }) {
    const v = new FakeTreeView(id, o.treeDataProvider);
    recorded.treeViews.set(id, v);
    return v;
  },
  registerWebviewPanelSerializer(
    viewType: string,
    serializer: { deserializeWebviewPanel(panel: unknown, state: unknown): Thenable<void> },
  ) {
    recorded.serializers.set(viewType, serializer);
    return { dispose: () => recorded.serializers.delete(viewType) };
  },
  createWebviewPanel(viewType: string, title: string, column: unknown, options: FakeWebviewPanel['options']) {
    const p = new FakeWebviewPanel(viewType, title, column, options);
    recorded.panels.push(p);
    return p;
  },
  async withProgress<T>(
    _o: unknown,
    task: (
      p: { report(v: { message?: string; increment?: number }): void },
      token: { isCancellationRequested: boolean; onCancellationRequested: (l: () => void) => Disposable },
    ) => Promise<T>,
  ) {
    // A message shown while a progress notification is still open is recorded with duringProgress.
    progressOpen++;
    try {
      return await task(
        { report: (v) => void recorded.progress.push(v) },
        { isCancellationRequested: false, onCancellationRequested: () => new Disposable() },
      );
    } finally {
      progressOpen--;
    }
  },
};

// ------------------------------------------------------------------ workspace
function globToRegex(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      re += '(?:.*/)?';
      i += glob[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '{') {
      const end = glob.indexOf('}', i);
      re +=
        '(?:' +
        glob
          .slice(i + 1, end)
          .split(',')
          .map((s) => s.replace(/[.+^$()|[\]\\]/g, '\\$&'))
          .join('|') +
        ')';
      i = end;
    } else re += c.replace(/[.+^$()|[\]\\?]/g, '\\$&');
  }
  return new RegExp('^' + re + '$');
}

function walk(dir: string, out: string[]): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === '.git') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
}

const fsEmitter = {
  open: new EventEmitter<FakeTextDocument>(),
  change: new EventEmitter<{ document: FakeTextDocument }>(),
  save: new EventEmitter<FakeTextDocument>(),
  close: new EventEmitter<FakeTextDocument>(),
};
export const documentEvents = fsEmitter;
/** Every file system watcher created, by glob: a test fires what the file system would. */
export const fileWatchers: {
  glob: string;
  create: EventEmitter<Uri>;
  delete: EventEmitter<Uri>;
  change: EventEmitter<Uri>;
}[] = [];

export const workspace = {
  isTrusted: true,
  workspaceFolders: undefined as undefined | { uri: Uri; name: string; index: number }[],
  textDocuments: [] as FakeTextDocument[],
  getConfiguration(section?: string) {
    return {
      get<T>(key: string, dflt?: T): T | undefined {
        const k = section ? `${section}.${key}` : key;
        return settings.has(k) ? (settings.get(k) as T) : dflt;
      },
    };
  },
  async findFiles(glob: string, _exclude?: string, max = Infinity): Promise<Uri[]> {
    const root = workspace.workspaceFolders?.[0]?.uri.fsPath;
    if (!root) return [];
    const files: string[] = [];
    walk(root, files);
    const re = globToRegex(glob);
    return files
      .filter((f) => re.test(relative(root, f).replace(/\\/g, '/')))
      .slice(0, max)
      .map((f) => Uri.file(f));
  },
  asRelativePath(u: Uri | string): string {
    const root = workspace.workspaceFolders?.[0]?.uri.fsPath;
    const p = typeof u === 'string' ? u : u.fsPath;
    return root ? relative(root, p) : p;
  },
  fs: {
    async writeFile(u: Uri, data: Uint8Array) {
      mkdirSync(dirname(u.fsPath), { recursive: true });
      writeFileSync(u.fsPath, data);
    },
    async readFile(u: Uri) {
      return new Uint8Array(readFileSync(u.fsPath));
    },
    async stat(u: Uri) {
      const s = statSync(u.fsPath);
      return { type: s.isDirectory() ? 2 : 1, size: s.size, mtime: s.mtimeMs, ctime: s.ctimeMs };
    },
    async readDirectory(u: Uri) {
      return readdirSync(u.fsPath, { withFileTypes: true }).map(
        (e) => [e.name, e.isDirectory() ? FileType.Directory : FileType.File] as [string, number],
      );
    },
  },
  onDidOpenTextDocument: fsEmitter.open.event,
  onDidChangeTextDocument: fsEmitter.change.event,
  onDidSaveTextDocument: fsEmitter.save.event,
  onDidCloseTextDocument: fsEmitter.close.event,
  onDidChangeConfiguration: configChanged.event,
  createFileSystemWatcher(glob: string) {
    const w = {
      glob,
      create: new EventEmitter<Uri>(),
      delete: new EventEmitter<Uri>(),
      change: new EventEmitter<Uri>(),
    };
    fileWatchers.push(w);
    return { onDidCreate: w.create.event, onDidDelete: w.delete.event, onDidChange: w.change.event, dispose() {} };
  },
};

// ------------------------------------------------------------------ commands, languages, env
const commandsRegistry = new Map<string, (...a: unknown[]) => unknown>();
export const commands = {
  registerCommand(id: string, fn: (...a: unknown[]) => unknown) {
    if (commandsRegistry.has(id)) throw new Error(`command '${id}' already registered`);
    commandsRegistry.set(id, fn);
    return new Disposable(() => commandsRegistry.delete(id));
  },
  async executeCommand(id: string, ...args: unknown[]) {
    recorded.executed.push({ command: id, args });
    const fn = commandsRegistry.get(id);
    return fn ? fn(...args) : undefined;
  },
  registered: () => [...commandsRegistry.keys()].sort(),
  /** Registered commands and those of other extensions the test installed (`externalCommands`). */
  async getCommands(_filterInternal?: boolean) {
    return [...commandsRegistry.keys(), ...externalCommands];
  },
};
/** Command ids of other extensions (e.g. the Python extension's python.launchTensorBoard). */
export const externalCommands = new Set<string>();

export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; tooltip?: string; arguments?: unknown[] },
  ) {}
}
export class CodeActionKind {
  static readonly QuickFix = new CodeActionKind('quickfix');
  constructor(readonly value: string) {}
}
export class WorkspaceEdit {
  readonly edits: { uri: Uri; range: Range; text: string }[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.edits.push({ uri, range, text });
  }
}
export class CodeAction {
  edit?: WorkspaceEdit;
  diagnostics?: Diagnostic[];
  isPreferred?: boolean;
  constructor(
    readonly title: string,
    readonly kind?: CodeActionKind,
  ) {}
}
export class MarkdownString {
  constructor(readonly value = '') {}
}
export class Hover {
  constructor(readonly contents: MarkdownString) {}
}
export enum CompletionItemKind {
  Property = 9,
  EnumMember = 19,
}
export class CompletionItem {
  insertText?: string;
  detail?: string;
  documentation?: MarkdownString;
  constructor(
    readonly label: string,
    readonly kind?: CompletionItemKind,
  ) {}
}
/** Installed extensions by id (the tests add 'redhat.vscode-yaml' to see the providers stand back). */
export const installedExtensions = new Set<string>();
export const extensions = {
  getExtension: (id: string) => (installedExtensions.has(id) ? { id } : undefined),
};
export const completionProviders: { selector: unknown; provider: unknown }[] = [];
export const hoverProviders: { selector: unknown; provider: unknown }[] = [];
export const codeActionProviders: { selector: unknown; provider: unknown }[] = [];
export const codeLensProviders: {
  selector: unknown;
  provider: { provideCodeLenses(doc: unknown): unknown; onDidChangeCodeLenses?: (l: () => void) => Disposable };
}[] = [];
export const languages = {
  registerCodeLensProvider(selector: unknown, provider: (typeof codeLensProviders)[number]['provider']) {
    const entry = { selector, provider };
    codeLensProviders.push(entry);
    return new Disposable(() => void codeLensProviders.splice(codeLensProviders.indexOf(entry), 1));
  },
  registerCompletionItemProvider(selector: unknown, provider: unknown) {
    const entry = { selector, provider };
    completionProviders.push(entry);
    return new Disposable(() => void completionProviders.splice(completionProviders.indexOf(entry), 1));
  },
  registerHoverProvider(selector: unknown, provider: unknown) {
    const entry = { selector, provider };
    hoverProviders.push(entry);
    return new Disposable(() => void hoverProviders.splice(hoverProviders.indexOf(entry), 1));
  },
  registerCodeActionsProvider(selector: unknown, provider: unknown) {
    const entry = { selector, provider };
    codeActionProviders.push(entry);
    return new Disposable(() => void codeActionProviders.splice(codeActionProviders.indexOf(entry), 1));
  },
  createDiagnosticCollection(name: string) {
    const c = new FakeDiagnosticCollection(name);
    recorded.diagnostics.set(name, c);
    return c;
  },
};

export const env = {
  clipboard: {
    async writeText(t: string) {
      recorded.clipboard = t;
    },
    async readText() {
      return recorded.clipboard;
    },
  },
  async openExternal(u: Uri) {
    recorded.executed.push({ command: '(openExternal)', args: [u.toString()] });
    return true;
  },
};
