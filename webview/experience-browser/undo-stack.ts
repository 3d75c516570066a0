// The curation actions done in this session, newest last, so "Undo" reverts the latest one.
import type { FeedbackChange } from '../../backend/core/protocol.js';

export class UndoStack {
  private readonly changes: FeedbackChange[] = [];
  constructor(private readonly max = 100) {}
  push(c: FeedbackChange): void {
    this.changes.push(c);
    if (this.changes.length > this.max) this.changes.shift();
  }
  peek(): FeedbackChange | undefined {
    return this.changes.at(-1);
  }
  /** Remove the change the backend reports as undone. */
  remove(changeId: string): void {
    const i = this.changes.findIndex((c) => c.changeId === changeId);
    if (i >= 0) this.changes.splice(i, 1);
  }
  get size(): number {
    return this.changes.length;
  }
}
