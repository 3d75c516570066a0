// Import this (dynamically, before any src/ module) so that 'vscode' resolves to the fake API.
import { register } from 'node:module';

register('./vscode-hooks.mjs', import.meta.url);
