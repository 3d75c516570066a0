// A run's own resume state, the same for every placement (issue 42 item 2): whether its starting
// weights were evaluated (and what they scored), its base accuracy (the weights entering the last
// stage), and the version each stage started from (the reference of a stage start). It is read and
// written through the buffer's state API (SQLite locally, PostgreSQL distributed); a run without a
// buffer (mode bench) keeps it in memory. Where a run is in its stages (stage index and step) is not
// here: it belongs to the weights, and is read from the checkpoint a run resumes from (rft.json).
import type { EvalResult } from './evaluate.js';

/** The part of the buffer's API the run state is kept through (ExperienceStore has it). */
export interface StateStore {
  getState<T = unknown>(runId: string, key: string): Promise<T | null>;
  setState(runId: string, key: string, value: unknown): Promise<void>;
}

/** The version (and checkpoint folder, where one was written) a stage started from. */
export interface StageStart {
  version: number;
  path?: string;
}

const START = 'eval_start';
const BASE = 'base_accuracy';
const stageKey = (i: number) => `stage_start:${i}`;
/** Keys distributed runs wrote before the state was one (read, never written). */
const LEGACY: Record<string, string> = { [START]: 'dist:eval_start', [BASE]: 'dist:base_accuracy' };

export class RunState {
  constructor(
    private readonly store: StateStore,
    readonly runId: string,
    /** What a run from before this state existed kept elsewhere (the in-process checkpoint's rft.json). */
    private readonly before: { startEvaluated?: boolean; base?: number } = {},
  ) {}

  /** A run without a buffer (mode bench): the state lives as long as the process. */
  static inMemory(runId: string): RunState {
    const m = new Map<string, unknown>();
    return new RunState(
      {
        getState: async <T>(_r: string, k: string) => (m.has(k) ? (m.get(k) as T) : null),
        setState: async (_r, k, v) => void m.set(k, v),
      },
      runId,
    );
  }

  private async get<T>(key: string): Promise<T | null> {
    const v = await this.store.getState<T>(this.runId, key);
    if (v !== null || !LEGACY[key]) return v;
    return this.store.getState<T>(this.runId, LEGACY[key]!);
  }

  /** Whether the starting weights were evaluated already (a resumed run does not repeat it). */
  async startEvaluated(): Promise<boolean> {
    return (await this.get(START)) !== null || this.before.startEvaluated === true;
  }

  /** The start evaluation, as it was recorded (older runs kept only its accuracy: undefined then). */
  async start(): Promise<EvalResult | undefined> {
    const v = await this.get<EvalResult | number | string>(START);
    return v !== null && typeof v === 'object' ? v : undefined;
  }

  async recordStart(r: EvalResult): Promise<void> {
    await this.store.setState(this.runId, START, r);
  }

  /** base_accuracy: the accuracy of the weights entering the last stage, once known. */
  async base(): Promise<number | undefined> {
    const v = await this.get<number>(BASE);
    return typeof v === 'number' ? v : this.before.base;
  }

  async setBase(accuracy: number): Promise<void> {
    await this.store.setState(this.runId, BASE, accuracy);
  }

  async stageStart(i: number): Promise<StageStart | undefined> {
    return (await this.get<StageStart>(stageKey(i))) ?? undefined;
  }

  /** Records where stage `i` started; the first record stands (a resumed stage started where it first did). */
  async markStageStart(i: number, s: StageStart): Promise<void> {
    if (!(await this.stageStart(i))) await this.store.setState(this.runId, stageKey(i), s);
  }
}
