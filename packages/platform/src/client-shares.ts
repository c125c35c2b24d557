/** Gives a client's units back; calling it again does nothing. */
export type ShareRelease = () => void;

/**
 * Counts the units of a shared bound (the gateway's upload bytes and file-read slots, the files service's document
 * checks) each client holds or waits for, so that one client cannot take the whole bound from the others.
 */
export class ClientShares {
  private readonly held = new Map<string, number>();

  /**
   * Counts `units` for `client` and answers their release, or undefined when the client already holds some and would
   * then hold more than `share` (a client holding none is always counted: one request is never refused by its own size).
   */
  take(client: string, units: number, share: number): ShareRelease | undefined {
    const mine = this.held.get(client) ?? 0;
    if (mine > 0 && mine + units > share) return undefined;
    this.held.set(client, mine + units);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(client) ?? 0) - units;
      if (left > 0) this.held.set(client, left);
      else this.held.delete(client);
    };
  }
}
