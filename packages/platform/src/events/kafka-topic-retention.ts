import { ConfigResourceTypes, ConfigSource, type Admin } from 'kafkajs';

/** retention.ms of a topic whose messages are kept until deleted. */
export const RETAIN_FOREVER_MS = '-1';

export interface RetentionChange {
  /** Cluster name of the topic. */
  topic: string;
  /** Its retention.ms before (the broker's default when the topic had no override of its own). */
  was: string;
}

/**
 * Sets retention.ms to -1 on those of `topics` (existing ones, cluster names) that have another value, and answers
 * which it changed; topics already at -1 are left alone, so calling it again changes nothing.
 *
 * kafkajs has only the legacy AlterConfigs, which replaces a topic's whole set of overrides: the topic's other
 * overrides are read and sent back with it, so an operator's own settings (max.message.bytes, ...) stay. One set
 * between this read and write would be lost; the window is one round trip, once per topic and process.
 */
export async function retainForever(admin: Admin, topics: readonly string[]): Promise<RetentionChange[]> {
  if (topics.length === 0) return [];
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
  });
  const changes: RetentionChange[] = [];
  for (const resource of resources) {
    const retention = resource.configEntries.find((e) => e.configName === 'retention.ms');
    if (retention?.configValue === RETAIN_FOREVER_MS) continue;
    const otherOverrides = resource.configEntries
      .filter((e) => e.configSource === ConfigSource.TOPIC_CONFIG && e.configName !== 'retention.ms' && !e.isSensitive)
      .map((e) => ({ name: e.configName, value: e.configValue }));
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: resource.resourceName, configEntries: [...otherOverrides, { name: 'retention.ms', value: RETAIN_FOREVER_MS }] }],
    });
    changes.push({ topic: resource.resourceName, was: retention?.configValue ?? 'unknown' });
  }
  return changes;
}
