// Module resolve hook for the extension tests: `import 'vscode'` loads the fake VS Code API.
export async function resolve(specifier, context, next) {
  if (specifier === 'vscode')
    return { url: new URL('./fake-vscode.ts', import.meta.url).href, shortCircuit: true, format: 'module' };
  return next(specifier, context);
}
