// Files the extension creates from a template get a name nothing has: the user's edited
// `train.rft.yaml` (their mappings, their fixes) is never overwritten by "Create a config from the
// template" or a model card's Start Training; the new one is `train-2.rft.yaml`, and so on.
import * as vscode from 'vscode';

/** `name` split before its extension; `.rft.yaml` / `.rft.yml` count as one extension. */
export function splitName(name: string): [stem: string, ext: string] {
  const m = /^(.+?)((?:\.rft)?\.[A-Za-z0-9]+)$/.exec(name);
  return m ? [m[1]!, m[2]!] : [name, ''];
}

/** The n-th candidate: n = 1 is the name itself, then `stem-2.ext`, `stem-3.ext`, ... */
export function candidateName(name: string, n: number): string {
  if (n <= 1) return name;
  const [stem, ext] = splitName(name);
  return `${stem}-${n}${ext}`;
}

/** The first candidate in `folder` that does not exist yet. */
export async function unusedUri(folder: vscode.Uri, name: string): Promise<vscode.Uri> {
  for (let n = 1; n < 10_000; n++) {
    const uri = vscode.Uri.joinPath(folder, candidateName(name, n));
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      return uri; // stat fails: nothing there
    }
  }
  throw new Error(`${vscode.Uri.joinPath(folder, name).fsPath}: 10,000 files of that name already exist; rename some`);
}
