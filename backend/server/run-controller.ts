// The RunController the server uses until the coordinator provides one: every call fails with
// a clear NotAvailable error (never a pretend success).
import type { RunController } from './ports.js';
import { NotAvailableError } from './errors.js';

export class UnavailableRunController implements RunController {
  async start(): Promise<never> {
    throw new NotAvailableError('starting a training run (the coordinator is not wired to the server yet)');
  }
  async stop(): Promise<never> {
    throw new NotAvailableError('stopping a run (the coordinator is not wired to the server yet)');
  }
  async resume(): Promise<never> {
    throw new NotAvailableError('resuming a run (the coordinator is not wired to the server yet)');
  }
  async evaluate(): Promise<never> {
    throw new NotAvailableError('evaluating a checkpoint (the coordinator is not wired to the server yet)');
  }
}
