/** Why a caller was not admitted: the line of waiting callers was full, or its wait ran past the limit. */
export type AdmissionRefusal = 'line-full' | 'waited-too-long';

/** Thrown by BoundedAdmission when a caller is turned away; the caller answers overload (UNAVAILABLE, HTTP 503). */
export class AdmissionRefusedError extends Error {
  constructor(readonly reason: AdmissionRefusal) {
    super(reason === 'line-full' ? 'too many callers are already waiting' : 'the wait for a free slot ran past its limit');
    this.name = 'AdmissionRefusedError';
  }
}

export interface AdmissionLimits {
  /** Units held at once at most (parser workers, bytes of upload bodies, ...). */
  capacity: number;
  /** Callers waiting at once at most; one more is refused at once. Patient callers are not counted. */
  maxWaiting: number;
  /** How long a caller waits for its units at most before it is refused. */
  maxWaitMs: number;
}

/** Gives the units back; calling it again does nothing. */
export type Release = () => void;

interface Waiter {
  weight: number;
  admit(): void;
}

/**
 * Admits work that costs a bounded resource (memory above all) so that at most `capacity` units are held at once.
 * A caller beyond it waits in a line of at most `maxWaiting` callers for at most `maxWaitMs`, in order of arrival,
 * and is refused (AdmissionRefusedError) when the line is full or its wait runs out: overload answered at once instead
 * of a process killed for its memory.
 *
 * Patient callers (background work that must never be lost, such as an ingestion) wait as long as it takes and are
 * never refused; they are admitted when no impatient caller waits, and hold at most `capacity - 1` units together
 * (when capacity > 1), so an impatient caller never waits behind long background work alone. They are not starved by a
 * steady stream of impatient callers either: once as many impatient callers as the capacity (at most 8) were
 * admitted while the first patient caller waited, it goes next, ahead of the impatient line, as soon as a unit is free
 * within its share. Before, one user's upload flood kept every ingestion pending until the flood stopped.
 */
export class BoundedAdmission {
  private held = 0;
  private heldPatiently = 0;
  private readonly line: Waiter[] = [];
  private readonly patientLine: Waiter[] = [];
  /** Impatient callers admitted while the first patient caller waited (since the last patient admission). */
  private admittedPastPatient = 0;
  private readonly patientTurnAfter: number;

  constructor(private readonly limits: AdmissionLimits) {
    if (!(limits.capacity >= 1)) throw new RangeError('BoundedAdmission: capacity must be at least 1');
    this.patientTurnAfter = Math.max(1, Math.min(Math.floor(limits.capacity), 8));
  }

  /** Units held now. */
  get inUse(): number {
    return this.held;
  }

  /** Impatient callers waiting now. */
  get waiting(): number {
    return this.line.length;
  }

  /**
   * Waits for `weight` units (at most the capacity) and answers their release. AdmissionRefusedError when the line is
   * full or the wait runs past maxWaitMs; the signal's reason when it aborts first.
   */
  acquire(weight = 1, signal?: AbortSignal): Promise<Release> {
    const units = Math.min(Math.max(weight, 0), this.limits.capacity);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.line.length === 0 && this.fits(units)) return Promise.resolve(this.take(units, false));
    if (this.line.length >= this.limits.maxWaiting) return Promise.reject(new AdmissionRefusedError('line-full'));
    return new Promise<Release>((resolve, reject) => {
      const leave = (error: Error) => {
        const at = this.line.indexOf(waiter);
        if (at < 0) return;
        this.line.splice(at, 1);
        done();
        reject(error);
        // The one leaving may have held back smaller requests behind it, or patient ones.
        this.admitWaiting();
      };
      const onAbort = () => leave(signal!.reason as Error);
      const timer = setTimeout(() => leave(new AdmissionRefusedError('waited-too-long')), this.limits.maxWaitMs);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        weight: units,
        admit: () => {
          done();
          resolve(this.take(units, false));
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.line.push(waiter);
    });
  }

  /** Waits as long as it takes for one unit, behind every impatient caller; never refused. */
  acquirePatiently(): Promise<Release> {
    if (this.line.length === 0 && this.patientFits()) return Promise.resolve(this.take(1, true));
    return new Promise<Release>((resolve) => {
      this.patientLine.push({ weight: 1, admit: () => resolve(this.take(1, true)) });
    });
  }

  /** Runs fn holding `weight` units (see acquire). */
  async run<T>(fn: () => Promise<T>, weight = 1): Promise<T> {
    const release = await this.acquire(weight);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Runs fn holding one unit, waiting as long as it takes (see acquirePatiently). */
  async runPatiently<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquirePatiently();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private fits(units: number): boolean {
    return this.held + units <= this.limits.capacity;
  }

  private patientFits(): boolean {
    const patientCap = Math.max(1, this.limits.capacity - 1);
    return this.fits(1) && this.heldPatiently < patientCap;
  }

  /** Whether the first patient caller has waited long enough (see the class) and fits now: it goes next. */
  private patientsTurn(): boolean {
    return this.patientLine.length > 0 && this.admittedPastPatient >= this.patientTurnAfter && this.patientFits();
  }

  private take(units: number, patient: boolean): Release {
    this.held += units;
    if (patient) {
      this.heldPatiently += units;
      this.admittedPastPatient = 0;
    } else if (this.patientLine.length > 0) this.admittedPastPatient += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= units;
      if (patient) this.heldPatiently -= units;
      this.admitWaiting();
    };
  }

  /**
   * In order of arrival: the first waiter that does not fit holds back those behind it, so a large one is not starved;
   * a patient caller whose turn it is (patientsTurn) goes before them.
   */
  private admitWaiting(): void {
    for (;;) {
      if (this.patientsTurn()) this.patientLine.shift()!.admit();
      else if (this.line.length > 0 && this.fits(this.line[0]!.weight)) this.line.shift()!.admit();
      else break;
    }
    if (this.line.length > 0) return;
    while (this.patientLine.length > 0 && this.patientFits()) this.patientLine.shift()!.admit();
  }
}
