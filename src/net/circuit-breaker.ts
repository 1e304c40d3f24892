// A circuit breaker per remote (an RDAP server's origin, later a project's origin): after `failures`
// consecutive failures the remote is skipped for `cooldownMs`, so a registry that is down costs a
// search nothing instead of a timeout per name. When the cooldown ends one request goes through as a
// probe (the others keep being skipped for another cooldown); its success closes the circuit, its
// failure opens it again.

export interface CircuitBreakerOptions {
  failures: number;
  cooldownMs: number;
  /** Millisecond clock (tests inject one). */
  now: () => number;
}

interface State {
  failures: number;
  /** Skipped until then; 0 while closed. */
  openUntil: number;
}

export class CircuitBreaker {
  private readonly states = new Map<string, State>();

  constructor(private readonly opts: CircuitBreakerOptions) {}

  /** Whether a request to `key` may go out now. A true after a cooldown is the probe: call success or failure. */
  allow(key: string): boolean {
    const state = this.states.get(key);
    if (!state || state.openUntil === 0) return true;
    const now = this.opts.now();
    if (now < state.openUntil) return false;
    state.openUntil = now + this.opts.cooldownMs;
    return true;
  }

  isOpen(key: string): boolean {
    const state = this.states.get(key);
    return state !== undefined && state.openUntil !== 0 && this.opts.now() < state.openUntil;
  }

  success(key: string): void {
    this.states.delete(key);
  }

  failure(key: string): void {
    const state = this.states.get(key) ?? { failures: 0, openUntil: 0 };
    state.failures++;
    if (state.failures >= this.opts.failures) state.openUntil = this.opts.now() + this.opts.cooldownMs;
    this.states.set(key, state);
  }
}
