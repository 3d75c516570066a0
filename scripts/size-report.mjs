// Sizes of product code (backend/, src/, webview/): files over 400 lines and functions over 80 lines
// (function declarations, methods, arrow functions and function expressions, measured from the first
// to the last line of the whole node), found with the TypeScript compiler API. Nested functions are
// counted on their own. Run: node scripts/size-report.mjs [--json]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIRS = ['backend', 'src', 'webview'];
export const FILE_LIMIT = 400;
export const FUNCTION_LIMIT = 80;

function sources(dir) {
  const out = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...sources(rel));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** The name a reader would search for: `Class.method`, `fn`, `const x = () =>`, or `(anonymous)`. */
function nameOf(node) {
  const own = node.name && ts.isIdentifier(node.name) ? node.name.text : undefined;
  const parent = node.parent;
  if ((ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)) && parent && ts.isClassLike(parent)) {
    return `${parent.name?.text ?? '(class)'}.${own ?? 'constructor'}`;
  }
  if (own) return own;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

export function sizeReport() {
  const files = [];
  const functions = [];
  for (const file of DIRS.flatMap(sources)) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    files.push({ file, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) });
    const visit = (node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        functions.push({ file, line: start + 1, name: nameOf(node), lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  files.sort((a, b) => b.lines - a.lines);
  functions.sort((a, b) => b.lines - a.lines);
  return {
    longestFile: files[0],
    longestFunction: functions[0],
    filesOver: files.filter((f) => f.lines > FILE_LIMIT),
    functionsOver: functions.filter((f) => f.lines > FUNCTION_LIMIT),
  };
}

if (process.argv[1] && relative(process.argv[1], fileURLToPath(import.meta.url)) === '') {
  const r = sizeReport();
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(r, null, 2));
  } else {
    console.log(`longest file: ${r.longestFile.file} (${r.longestFile.lines} lines)`);
    const f = r.longestFunction;
    console.log(`longest function: ${f.name} ${f.file}:${f.line} (${f.lines} lines)`);
    console.log(`\n${r.filesOver.length} files over ${FILE_LIMIT} lines:`);
    for (const x of r.filesOver) console.log(`  ${String(x.lines).padStart(5)}  ${x.file}`);
    console.log(`\n${r.functionsOver.length} functions over ${FUNCTION_LIMIT} lines:`);
    for (const x of r.functionsOver) console.log(`  ${String(x.lines).padStart(5)}  ${x.name}  ${x.file}:${x.line}`);
  }
}
