// The policy the server answers with, and the switch to new weights between requests: a weight
// update waits for the requests in flight to finish and holds new ones until it is applied, so every
// request is answered by one version from its first token to its last.
import type { Transformer } from '../../model/transformer.js';
import type { RolloutModel } from '../workflow.js';
import { DecodeBatcher } from './batcher.js';

export interface ServedPolicy {
  /** What samples (its `version` is the policy version that answers). */
  model: RolloutModel;
  /** The weights themselves, when in this process: top_logprobs needs full distributions. */
  transformer?: Transformer;
}

export class PolicyGate {
  private active = 0;
  private drained: (() => void)[] = [];
  private switching: Promise<void> | undefined;
  /** The continuous batch requests decode in (each request is in flight while its rows run, so a switch waits for the batch to drain). */
  readonly batcher = new DecodeBatcher();

  constructor(
    private policy: ServedPolicy,
    /** The model id clients see in /v1/models and in every answer. */
    readonly modelId: string,
  ) {}

  get version(): number {
    return this.policy.model.version;
  }

  /** Runs FN with the policy, counted as in flight (a switch waits for it). */
  async use<T>(fn: (p: ServedPolicy) => Promise<T>): Promise<T> {
    while (this.switching) await this.switching;
    this.active++;
    try {
      return await fn(this.policy);
    } finally {
      this.active--;
      if (this.active === 0) for (const d of this.drained.splice(0)) d();
    }
  }

  /**
   * Holds the policy for a weight update: resolves once no request is in flight; requests arriving
   * meanwhile wait until the returned release is called, and are answered by the new version.
   */
  async hold(): Promise<() => void> {
    while (this.switching) await this.switching;
    let done!: () => void;
    this.switching = new Promise((r) => (done = r));
    if (this.active > 0) await new Promise<void>((r) => this.drained.push(r));
    return () => {
      this.switching = undefined;
      done();
    };
  }

  /** Switches to the policy UPDATE gives, between requests (see hold). */
  async switchTo(update: (old: ServedPolicy) => Promise<ServedPolicy> | ServedPolicy): Promise<void> {
    const release = await this.hold();
    try {
      this.policy = await update(this.policy);
    } finally {
      release();
    }
  }
}
