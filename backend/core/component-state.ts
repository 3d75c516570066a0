// What a component (explorer, trainer) is doing right now, and how long it has spent in each state:
// the idle fraction in the metrics is the time spent waiting over the time since the clock started.
// (core/protocol.ts `ComponentState` carries it to the dashboard, with the component's name.)
export type ComponentActivity = 'starting' | 'waiting' | 'generating' | 'training' | 'syncing' | 'stopped';

export class StateClock {
  private current: ComponentActivity = 'starting';
  private since = performance.now();
  private readonly start = performance.now();
  private readonly spent: Record<ComponentActivity, number> = {
    starting: 0,
    waiting: 0,
    generating: 0,
    training: 0,
    syncing: 0,
    stopped: 0,
  };

  constructor(private readonly onChange?: (state: ComponentActivity, detail?: string) => void) {}

  get state(): ComponentActivity {
    return this.current;
  }

  set(state: ComponentActivity, detail?: string): void {
    if (state === this.current) return;
    const now = performance.now();
    this.spent[this.current] += now - this.since;
    this.current = state;
    this.since = now;
    this.onChange?.(state, detail);
  }

  /** Seconds per state (the current one counted up to now) and the idle (waiting) fraction. */
  snapshot(): { elapsed_s: number; idle: number } & Record<`${ComponentActivity}_s`, number> {
    const now = performance.now();
    const s = { ...this.spent, [this.current]: this.spent[this.current] + (now - this.since) };
    const elapsed = (now - this.start) / 1000;
    return {
      elapsed_s: elapsed,
      idle: elapsed > 0 ? s.waiting / 1000 / elapsed : 0,
      starting_s: s.starting / 1000,
      waiting_s: s.waiting / 1000,
      generating_s: s.generating / 1000,
      training_s: s.training / 1000,
      syncing_s: s.syncing / 1000,
      stopped_s: s.stopped / 1000,
    };
  }
}
