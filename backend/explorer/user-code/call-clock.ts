// The time limit of each call into a `workflow.file` thread (user-code/host.ts): counted from when
// the thread takes the call up, paused while the call waits on the explorer (host's serve), and on
// expiry a ping tells a busy thread (the call fails alone) from a blocked one (the thread is stopped
// and the calls in it run again alone). A call posted and never taken up is watched too.
import { answers, type Live, type Pending, settle } from './thread.js';

/** What the clock needs of its host: the limit, stopping a thread, and counting a call past its limit. */
export interface ClockHost {
  readonly timeoutMs: number;
  end(l: Live, why: string, terminate: boolean, bystanders?: boolean): void;
  timedOut(): void;
}

export class CallClock {
  private nextPing = 0;

  constructor(private readonly host: ClockHost) {}

  arm(l: Live, id: number, p: Pending): void {
    p.armedAt = performance.now();
    p.timer = setTimeout(() => void this.expire(l, id), p.remaining);
  }

  /**
   * A call posted and not yet taken up: it has no limit of its own while a call of the thread runs
   * (that call's limit stops a loop, and this one is then run again alone). The watch is for a
   * thread that takes up nothing for a whole limit with no call running: something outside any call
   * blocks it (a loop in a timer an earlier call left), and it is stopped if it does not answer.
   */
  queued(l: Live, id: number, p: Pending): void {
    p.timer = setTimeout(() => void this.unstarted(l, id), this.host.timeoutMs);
  }

  /** The thread took the call up ('started'): its limit runs from now. */
  started(l: Live, id: number): void {
    const p = l.pending.get(id);
    if (!p || p.started) return;
    p.started = true;
    clearTimeout(p.timer);
    this.arm(l, id, p);
  }

  private async unstarted(l: Live, id: number): Promise<void> {
    const p = l.pending.get(id);
    if (!p || p.started) return;
    if (l.checking || [...l.pending.values()].some((q) => q.started)) return this.queued(l, id, p);
    l.checking = true;
    const answered = await answers(l, this.nextPing++);
    l.checking = false;
    if (answered) {
      // A pong comes after the call's 'started' (messages keep their order): it runs now.
      if (l.pending.get(id) === p && !p.started) this.queued(l, id, p);
      return;
    }
    this.host.end(
      l,
      `its thread was stopped: it took up no call for ${this.host.timeoutMs / 1000} s (workflow.code_timeout_seconds) and stopped answering (a synchronous loop left running by an earlier call, e.g. in a timer?)`,
      true,
      true,
    );
  }

  private async expire(l: Live, id: number): Promise<void> {
    // The thread is being checked: this call most likely ran beside the call under check (calls
    // interleave at their awaits) and was starved by its loop, so it is a bystander until that check
    // ends, with a fresh limit. If the thread is stopped, end() runs it again alone; if it answers,
    // this call is checked in turn. (A call queued behind a loop never gets here: its limit has not started.)
    if (l.checking) {
      const q = l.pending.get(id);
      if (q) {
        q.remaining = this.host.timeoutMs;
        this.arm(l, id, q);
      }
      return;
    }
    const p = settle(l, id);
    if (!p) return;
    l.checking = true;
    const limit = `did not return within ${this.host.timeoutMs / 1000} s (workflow.code_timeout_seconds)`;
    this.host.timedOut();
    const answered = await answers(l, this.nextPing++);
    l.checking = false;
    if (answered) return p.reject(new Error(limit));
    const why = `${limit} and its thread stopped answering (a synchronous loop?): the thread was stopped`;
    p.reject(new Error(why));
    this.host.end(
      l,
      `its thread was stopped: a call ${limit} and the thread stopped answering (a synchronous loop?)`,
      true,
      true,
    );
  }
}
