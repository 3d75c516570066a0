// The HTML shell of every webview: a strict Content-Security-Policy (nothing but our own files
// and nonce'd scripts/styles), codicons, and the bundled webview script.
import { randomBytes } from 'node:crypto';

export function nonce(): string {
  return randomBytes(18)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '');
}

export interface ShellOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  codiconCssUri: string;
  styleUri: string;
  title: string;
}

export function csp(o: Pick<ShellOptions, 'cspSource' | 'nonce'>): string {
  return [
    "default-src 'none'",
    `img-src ${o.cspSource} data:`,
    `font-src ${o.cspSource}`,
    `style-src ${o.cspSource} 'nonce-${o.nonce}'`,
    `script-src 'nonce-${o.nonce}'`,
  ].join('; ');
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export function shellHtml(o: ShellOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp(o)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" nonce="${o.nonce}" href="${esc(o.codiconCssUri)}" id="vscode-codicon-stylesheet">
<link rel="stylesheet" nonce="${o.nonce}" href="${esc(o.styleUri)}">
<title>${esc(o.title)}</title>
</head>
<body>
<div id="app"></div>
<script nonce="${o.nonce}" src="${esc(o.scriptUri)}"></script>
</body>
</html>`;
}
