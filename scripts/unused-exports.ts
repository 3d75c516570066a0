// Exported names of product code (backend, src, webview) that no other file imports: dead code, or an
// `export` that only the file itself needs. Run `node --import tsx scripts/unused-exports.ts`;
// test/architecture/unused-exports.test.ts keeps the list empty. One parse per file (no type check):
// named imports and re-exports count as uses, as do `import * as` and dynamic `import()` (all of the
// module's names), and tests and benches count as users. Entry points' exports (what VS Code, a
// worker thread or a bundle loads by path) are used by definition.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PRODUCT = ['backend', 'src', 'webview'];
const USERS = [...PRODUCT, 'test', 'bench', 'scripts'];
/** Modules loaded by path or by a host, not imported: every export of theirs is used. */
const ENTRIES = new Set([
  'backend/cli.ts',
  'backend/serve.ts',
  'src/extension.ts',
  'backend/explorer/workers/rollout-worker.ts',
  'backend/explorer/user-code/worker.ts',
]);

export interface UnusedExport {
  file: string;
  name: string;
  line: number;
  /** The file itself uses the name: only the `export` is unneeded. */
  usedLocally: boolean;
}

function tsFiles(dir: string, out: string[] = []): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return out;
  for (const name of readdirSync(abs)) {
    const rel = join(dir, name);
    if (name === 'node_modules' || name === 'fixtures') continue;
    if (statSync(join(ROOT, rel)).isDirectory()) tsFiles(rel, out);
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

function resolveSpec(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(ROOT, dirname(from), spec);
  const stem = base.replace(/\.(m?js|ts)$/, '');
  for (const c of [`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, join(base, 'index.ts')])
    if (existsSync(c) && statSync(c).isFile()) return relative(ROOT, c);
  return undefined;
}

interface Parsed {
  exports: Map<string, number>;
  /** Identifiers used in the file outside export declarations' own names. */
  locals: Set<string>;
}

export function unusedExports(): UnusedExport[] {
  const all = USERS.flatMap((d) => tsFiles(d));
  const parsed = new Map<string, Parsed>();
  /** file -> names imported from it by other files; '*' = all of them. */
  const used = new Map<string, Set<string>>();
  const use = (file: string | undefined, name: string) => {
    if (!file) return;
    (used.get(file) ?? used.set(file, new Set()).get(file)!).add(name);
  };
  /** Re-exports: `export { a as b } from './x'` makes x's `a` used when this file's `b` is. */
  const reexports: { file: string; name: string; target: string; targetName: string }[] = [];
  /** `export * from './x'`: names used of this file that it does not declare itself may be x's. */
  const starExports: { file: string; target: string }[] = [];

  for (const file of all) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const exports = new Map<string, number>();
    /** `import * as ns`: ns.name uses `name`; ns on its own, everything. */
    const namespaces = new Map<string, string>();
    const declNames = new Set<ts.Node>();
    const lineOf = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
    const exported = (n: ts.Node) =>
      ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

    for (const st of sf.statements) {
      if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) {
        const target = resolveSpec(file, st.moduleSpecifier.text);
        const b = st.importClause?.namedBindings;
        if (st.importClause?.name) use(target, 'default');
        if (b && ts.isNamespaceImport(b) && target) namespaces.set(b.name.text, target);
        if (b && ts.isNamedImports(b)) for (const el of b.elements) use(target, (el.propertyName ?? el.name).text);
        if (!st.importClause) use(target, '*');
      } else if (ts.isExportDeclaration(st)) {
        const target =
          st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)
            ? resolveSpec(file, st.moduleSpecifier.text)
            : undefined;
        if (!st.exportClause) {
          if (target) starExports.push({ file, target });
        } else if (ts.isNamedExports(st.exportClause)) {
          for (const el of st.exportClause.elements) {
            exports.set(el.name.text, lineOf(el));
            declNames.add(el.name);
            if (target)
              reexports.push({ file, name: el.name.text, target, targetName: (el.propertyName ?? el.name).text });
          }
        } else use(target, '*');
      } else if (ts.isExportAssignment(st)) {
        exports.set('default', lineOf(st));
      } else if (exported(st)) {
        const isDefault = (ts.getModifiers(st as ts.HasModifiers) ?? []).some(
          (m) => m.kind === ts.SyntaxKind.DefaultKeyword,
        );
        if (ts.isVariableStatement(st)) {
          for (const d of st.declarationList.declarations)
            if (ts.isIdentifier(d.name)) {
              exports.set(d.name.text, lineOf(d));
              declNames.add(d.name);
            }
        } else if (
          (ts.isFunctionDeclaration(st) ||
            ts.isClassDeclaration(st) ||
            ts.isInterfaceDeclaration(st) ||
            ts.isTypeAliasDeclaration(st) ||
            ts.isEnumDeclaration(st)) &&
          st.name
        ) {
          exports.set(isDefault ? 'default' : st.name.text, lineOf(st));
          declNames.add(st.name);
        }
      }
    }
    const locals = new Set<string>();
    const visit = (n: ts.Node) => {
      if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const arg = n.arguments[0];
        const target = arg && ts.isStringLiteralLike(arg) ? resolveSpec(file, arg.text) : undefined;
        // `const { a, b } = await import('./x.js')` uses a and b; anything else, all of x.
        const holder = ts.isAwaitExpression(n.parent) ? n.parent.parent : n.parent;
        if (holder && ts.isVariableDeclaration(holder) && ts.isObjectBindingPattern(holder.name))
          for (const el of holder.name.elements) {
            const key = el.propertyName ?? el.name;
            use(target, ts.isIdentifier(key) ? key.text : '*');
          }
        else if (holder && ts.isParenthesizedExpression(holder) && ts.isPropertyAccessExpression(holder.parent))
          use(target, holder.parent.name.text);
        else use(target, '*');
      }
      if (ts.isIdentifier(n) && namespaces.has(n.text) && !ts.isNamespaceImport(n.parent)) {
        const target = namespaces.get(n.text)!;
        if (ts.isPropertyAccessExpression(n.parent) && n.parent.expression === n) use(target, n.parent.name.text);
        else if (ts.isQualifiedName(n.parent) && n.parent.left === n) use(target, n.parent.right.text);
        else use(target, '*');
      }
      if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
        const target = resolveSpec(file, n.argument.literal.text);
        use(target, n.qualifier && ts.isIdentifier(n.qualifier) ? n.qualifier.text : '*');
      }
      if (ts.isIdentifier(n) && !declNames.has(n)) locals.add(n.text);
      ts.forEachChild(n, visit);
    };
    visit(sf);
    parsed.set(file, { exports, locals });
  }

  // Names used through re-exports reach their source, repeatedly (a chain of re-exports).
  for (let changed = true; changed; ) {
    changed = false;
    for (const r of starExports) {
      const own = parsed.get(r.file)?.exports;
      const t = used.get(r.target) ?? used.set(r.target, new Set()).get(r.target)!;
      for (const name of used.get(r.file) ?? [])
        if (!own?.has(name) && !t.has(name)) {
          t.add(name);
          changed = true;
        }
    }
    for (const r of reexports) {
      const u = used.get(r.file);
      if (!(u?.has(r.name) || u?.has('*') || ENTRIES.has(r.file))) continue;
      const t = used.get(r.target) ?? used.set(r.target, new Set()).get(r.target)!;
      if (!t.has(r.targetName)) {
        t.add(r.targetName);
        changed = true;
      }
    }
  }

  const out: UnusedExport[] = [];
  for (const [file, p] of parsed) {
    if (!PRODUCT.some((d) => file.startsWith(`${d}/`)) || ENTRIES.has(file)) continue;
    if (/^webview\/[^/]+\/main\.ts$/.test(file)) continue;
    const u = used.get(file);
    if (u?.has('*')) continue;
    for (const [name, line] of p.exports)
      if (!u?.has(name)) out.push({ file, name, line, usedLocally: p.locals.has(name) });
  }
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const list = unusedExports();
  for (const u of list) console.log(`${u.file}:${u.line}: ${u.name}${u.usedLocally ? ' (used in its file)' : ''}`);
  console.log(
    `${list.length} unused exports (${list.filter((u) => !u.usedLocally).length} used nowhere, ${list.filter((u) => u.usedLocally).length} only in their own file)`,
  );
}
