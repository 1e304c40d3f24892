// What a test process started (gateways, PostgreSQL servers, temp dirs) must not outlive it: the
// cleanups registered here run at exit and when a signal stops the process (tap's timeout sends
// SIGTERM), after which the signal is delivered again so it keeps its meaning (default death, or tap's
// signal-exit handling, which only acts when it is the sole listener).
const cleanups = new Set<() => void>();
const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
let installed = false;

function runAll(): void {
  for (const fn of cleanups) {
    try {
      fn();
    } catch {
      // one failed cleanup must not keep the others from running
    }
  }
}

/** Runs `fn` (synchronous: it runs in 'exit') when the test process ends, however it ends. */
export function onTestProcessExit(fn: () => void): void {
  cleanups.add(fn);
  if (installed) return;
  installed = true;
  process.once('exit', runAll);
  const handlers = new Map<NodeJS.Signals, () => void>();
  for (const signal of SIGNALS) {
    const onSignal = (): void => {
      runAll();
      for (const [sig, handler] of handlers) process.removeListener(sig, handler);
      process.kill(process.pid, signal);
    };
    handlers.set(signal, onSignal);
    process.on(signal, onSignal);
  }
}
