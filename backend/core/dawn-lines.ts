// Lines Dawn (the WebGPU engine's native library) writes straight to stderr when it probes for a GPU:
// `Warning: vkCreateInstance: Found no drivers!`, `Warning: … shaderUniform…ArrayDynamicIndexing
// required`, and the `    at CheckVkSuccessImpl (…/third_party/dawn/…)` lines under them. Every
// process that probes prints them, also on a CPU-only run that never uses a GPU: they are Dawn's
// word on why it has no adapter (kept for that), never an error of the run (not in a failure's log
// tail, not an `[error]` line in the editor's log).

/** Whether a stderr line is one of Dawn's probe warnings (or its source-location line). */
export function isDawnLine(line: string): boolean {
  return /^Warning: /.test(line) || /^\s+at \S+ \(.*(?:dawn|Dawn)[^)]*\)\s*$/.test(line);
}

/** Dawn's warnings among `lines`, without the `Warning: ` prefix and source lines: the reason it gave. */
export function dawnReasons(lines: readonly string[]): string[] {
  return lines.filter((l) => /^Warning: /.test(l)).map((l) => l.slice('Warning: '.length).trim());
}
