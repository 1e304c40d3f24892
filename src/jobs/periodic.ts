// A background job's timer: a run now, then one every interval, never two at once (a tick that finds
// the last run still going is skipped), on a timer that never keeps the process alive. stop() ends the
// timer, tells the run under way (its `stopped` turns true) and waits for it.
export interface Periodic {
  stop(): Promise<void>;
}

export function startPeriodic(run: (stopped: () => boolean) => Promise<unknown>, intervalMs: number, onError: (err: unknown) => void): Periodic {
  let stopped = false;
  let running: Promise<void> | undefined;
  const isStopped = (): boolean => stopped;
  const tick = (): void => {
    if (stopped || running) return;
    running = run(isStopped)
      .then(() => undefined, onError)
      .finally(() => (running = undefined));
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
