// Types of scripts/gen-file-reference.mjs (the file reference generator), for the test that imports it.
export const REFERENCE_FILE: string;
export const REGENERATE: string;
export function headerOf(text: string): string;
export function generateReference(): { text: string; missing: string[] };
