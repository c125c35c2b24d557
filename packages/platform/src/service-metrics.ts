import { Counter, Gauge, Registry } from 'prom-client';

/**
 * What the services themselves do (verification queue, ingestions, mails, rate limits, consumer lag), served by every
 * /metrics endpoint beside the gRPC calls and the event pipeline. Labels are fixed sets (outcomes, kinds, limit and group
 * names), never ids or user data. The metrics are made once per process by the module that updates them.
 */
export const serviceMetrics = new Registry();

/** A counter in serviceMetrics. */
export function serviceCounter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [serviceMetrics] });
}

/** One sample of a sampled gauge: its labels and value. */
export interface GaugeSample<L extends string> {
  labels: Partial<Record<L, string>>;
  value: number;
}

/** Reads the current values of a sampled gauge; called at each scrape, so it must be a bounded query. */
export type GaugeSource<L extends string> = () => Promise<GaugeSample<L>[]> | GaugeSample<L>[];

/** A gauge read at each scrape from the sources registered with it (a store, a consumer); added and removed at will. */
export interface SampledGauge<L extends string> {
  gauge: Gauge<L>;
  /** Adds a source; the returned function removes it (its samples go with it at the next scrape). */
  addSource(source: GaugeSource<L>): () => void;
}

/** How long one source may take at a scrape; past it (an engine down) its samples are left out of that scrape. */
export const GAUGE_SOURCE_TIMEOUT_MS = 2000;

/**
 * A gauge in serviceMetrics sampled at each scrape (prom-client's collect()): every source is asked for its values; one
 * that fails or takes longer than GAUGE_SOURCE_TIMEOUT_MS (an engine down) is left out of that scrape, so /metrics
 * still answers.
 */
export function sampledGauge<L extends string>(name: string, help: string, labelNames: readonly L[]): SampledGauge<L> {
  const sources = new Set<GaugeSource<L>>();
  const sampleOf = async (source: GaugeSource<L>): Promise<GaugeSample<L>[]> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<GaugeSample<L>[]>((resolve) => {
      timer = setTimeout(() => resolve([]), GAUGE_SOURCE_TIMEOUT_MS);
      timer.unref();
    });
    try {
      return await Promise.race([Promise.resolve().then(source), timeout]);
    } catch {
      return [];
    } finally {
      clearTimeout(timer);
    }
  };
  const gauge: Gauge<L> = new Gauge({
    name,
    help,
    labelNames,
    registers: [serviceMetrics],
    async collect() {
      const samples = (await Promise.all([...sources].map(sampleOf))).flat();
      gauge.reset();
      // Two sources with the same labels (two logs of one group in a process) add up.
      for (const { labels, value } of samples) gauge.inc(labels as never, value);
    },
  });
  return {
    gauge,
    addSource(source) {
      sources.add(source);
      return () => {
        sources.delete(source);
      };
    },
  };
}
