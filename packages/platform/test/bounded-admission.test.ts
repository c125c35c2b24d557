import { AdmissionRefusedError, BoundedAdmission } from '../src/bounded-admission';

/** A piece of work that runs until the test ends it, and says whether it has started. */
function work() {
  let started = false;
  let finish!: () => void;
  const ended = new Promise<void>((resolve) => (finish = resolve));
  return {
    get started() {
      return started;
    },
    finish,
    run: async () => {
      started = true;
      await ended;
    },
  };
}

/** Lets every promise callback that is ready run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('BoundedAdmission', () => {
  it('runs at most `capacity` at once: the next one waits until one ends, one beyond the line is refused at once', async () => {
    const admission = new BoundedAdmission({ capacity: 2, maxWaiting: 1, maxWaitMs: 60_000 });
    const [a, b, c] = [work(), work(), work()];
    const runs = [admission.run(a.run), admission.run(b.run), admission.run(c.run)];
    await settle();
    expect([a.started, b.started, c.started]).toEqual([true, true, false]);

    await expect(admission.run(async () => 'never')).rejects.toEqual(new AdmissionRefusedError('line-full'));

    a.finish();
    await settle();
    expect(c.started).toBe(true);
    b.finish();
    c.finish();
    await Promise.all(runs);
    expect(admission.inUse).toBe(0);
  });

  it('refuses a caller whose wait runs past the limit, and the line moves on without it', async () => {
    jest.useFakeTimers();
    try {
      const admission = new BoundedAdmission({ capacity: 1, maxWaiting: 4, maxWaitMs: 1_000 });
      const holder = work();
      const holding = admission.run(holder.run);
      const waited = admission.run(async () => 'late');
      jest.advanceTimersByTime(1_000);
      await expect(waited).rejects.toEqual(new AdmissionRefusedError('waited-too-long'));
      expect(admission.waiting).toBe(0);
      holder.finish();
      await holding;
      await expect(admission.run(async () => 'next')).resolves.toBe('next');
    } finally {
      jest.useRealTimers();
    }
  });

  it('lets patient work wait without a limit behind impatient callers, never refusing it', async () => {
    const admission = new BoundedAdmission({ capacity: 2, maxWaiting: 1, maxWaitMs: 60_000 });
    const [first, second, upload] = [work(), work(), work()];
    const background = [admission.runPatiently(first.run), admission.runPatiently(second.run)];
    await settle();
    // At most capacity - 1 units go to patient work: an upload finds one free at once.
    expect([first.started, second.started]).toEqual([true, false]);
    const uploading = admission.run(upload.run);
    await settle();
    expect(upload.started).toBe(true);

    // The line is full of impatient callers; patient work still queues.
    const queued = work();
    const queuedRun = admission.run(queued.run);
    const third = work();
    const thirdRun = admission.runPatiently(third.run);
    first.finish();
    await settle();
    expect([queued.started, second.started, third.started]).toEqual([true, false, false]);
    upload.finish();
    queued.finish();
    await Promise.all([uploading, queuedRun]);
    await settle();
    expect(second.started).toBe(true);
    second.finish();
    await settle();
    expect(third.started).toBe(true);
    third.finish();
    await Promise.all([...background, thirdRun]);
  });

  it('does not starve patient work under a steady stream of impatient callers: it goes next once `capacity` of them were admitted past it', async () => {
    const admission = new BoundedAdmission({ capacity: 2, maxWaiting: 4, maxWaitMs: 60_000 });
    const running = [work(), work()];
    const runs = running.map((w) => admission.run(w.run));
    // An impatient caller always waits (a flood of upload checks), so patient work is never admitted "while none waits".
    let waitingUpload = work();
    runs.push(admission.run(waitingUpload.run));
    const ingestion = work();
    const ingesting = admission.runPatiently(ingestion.run);
    await settle();
    expect(ingestion.started).toBe(false);

    // Two impatient callers (the capacity) are admitted past it; each time one more joins the line.
    for (let round = 0; round < 2; round++) {
      running.shift()!.finish();
      await settle();
      expect(waitingUpload.started).toBe(true);
      running.push(waitingUpload);
      waitingUpload = work();
      runs.push(admission.run(waitingUpload.run));
      await settle();
      expect(ingestion.started).toBe(false);
    }
    // The next free unit is the patient caller's, though an impatient one waits.
    running.shift()!.finish();
    await settle();
    expect([ingestion.started, waitingUpload.started]).toEqual([true, false]);
    // It holds at most capacity - 1: the next free unit goes to the waiting impatient caller.
    running.shift()!.finish();
    await settle();
    expect(waitingUpload.started).toBe(true);

    ingestion.finish();
    waitingUpload.finish();
    await Promise.all([...runs, ingesting]);
    expect(admission.inUse).toBe(0);
  });

  it('counts weights: small requests share what one large one would hold, a large one waits for room', async () => {
    const admission = new BoundedAdmission({ capacity: 100, maxWaiting: 4, maxWaitMs: 60_000 });
    const [small1, small2, large] = [work(), work(), work()];
    const runs = [admission.run(small1.run, 30), admission.run(small2.run, 30), admission.run(large.run, 100)];
    await settle();
    expect([small1.started, small2.started, large.started]).toEqual([true, true, false]);
    small1.finish();
    await settle();
    expect(large.started).toBe(false);
    small2.finish();
    await settle();
    expect(large.started).toBe(true);
    large.finish();
    await Promise.all(runs);
  });

  it('takes a waiting caller out of the line when its signal aborts', async () => {
    const admission = new BoundedAdmission({ capacity: 1, maxWaiting: 1, maxWaitMs: 60_000 });
    const holder = work();
    const holding = admission.run(holder.run);
    const controller = new AbortController();
    const waiting = admission.acquire(1, controller.signal);
    controller.abort(new Error('client gone'));
    await expect(waiting).rejects.toThrow('client gone');
    expect(admission.waiting).toBe(0);
    holder.finish();
    await holding;
    expect(admission.inUse).toBe(0);
  });
});
