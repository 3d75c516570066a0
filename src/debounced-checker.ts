// One pending check per file while the user types: a new edit restarts that file's timer, so a
// burst of keystrokes costs one backend validation. Used by taskset and run-config diagnostics.
export class DebouncedChecker {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly debounceMs: number) {}

  /** Runs `check` for `key` once `debounceMs` passed without another call for the same key. */
  schedule(key: string, check: () => Promise<unknown>): void {
    const t = this.timers.get(key);
    if (t) clearTimeout(t);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        void check().catch(() => undefined);
      }, this.debounceMs),
    );
  }

  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
