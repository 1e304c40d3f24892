// At most one piece of work in flight per key: concurrent misses for one object join the fill that is
// already running instead of starting their own storage read. The entry is forgotten when its work
// settles, or earlier when a purge abandons it.
export interface Flight {
  /** Settles when the work is over, either way. */
  readonly done: Promise<unknown>;
}

export class SingleFlight<T extends Flight> {
  private readonly flights = new Map<string, T>();

  get(key: string): T | undefined {
    return this.flights.get(key);
  }

  /** Registers `flight` as the one for `key` (replacing none: call it only after get() found nothing). */
  add(key: string, flight: T): T {
    this.flights.set(key, flight);
    const forget = (): void => this.forget(key, flight);
    flight.done.then(forget, forget);
    return flight;
  }

  /** Forgets `flight` if it is still the one for `key`; later requests start afresh. */
  forget(key: string, flight: T): void {
    if (this.flights.get(key) === flight) this.flights.delete(key);
  }

  entries(): IterableIterator<[string, T]> {
    return this.flights.entries();
  }

  values(): IterableIterator<T> {
    return this.flights.values();
  }

  get size(): number {
    return this.flights.size;
  }
}
