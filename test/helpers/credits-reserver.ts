// A worker thread with its own connection to a meta.db, standing in for another gateway process:
// it waits for the shared start signal, then takes `attempts` one-unit upload reservations as fast as
// it can and keeps them (reservations of a live holder count for everyone). Posts how many it got.
import { parentPort, workerData } from 'node:worker_threads';
import { Refusal } from '../../src/errors/refusal.js';
import type { CreditsConfig } from '../../src/config/schema.js';
import { CreditsService } from '../../src/credits/credits.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';

export interface ReserverInput {
  file: string;
  userId: string;
  attempts: number;
  config: CreditsConfig;
  /** An Int32Array's buffer: the workers start when [0] becomes 1. */
  start: SharedArrayBuffer;
}

export interface ReserverResult {
  reserved: number;
  refused: number;
  holder: string;
}

const input = workerData as ReserverInput;
const db = openDatabase(input.file);
const credits = new CreditsService(createRepos(db), input.config, () => new Date());
const flag = new Int32Array(input.start);
parentPort?.postMessage('ready');
Atomics.wait(flag, 0, 0);
let reserved = 0;
let refused = 0;
for (let i = 0; i < input.attempts; i++) {
  try {
    await credits.reserveUpload(input.userId, 1000);
    reserved++;
  } catch (err) {
    if (!(err instanceof Refusal) || err.kind !== 'insufficient_credits') throw err;
    refused++;
  }
}
db.close();
const result: ReserverResult = { reserved, refused, holder: credits.holder };
parentPort?.postMessage(result);
