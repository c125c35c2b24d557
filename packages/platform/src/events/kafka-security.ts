import { readFileSync } from 'node:fs';
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import type { SASLOptions } from 'kafkajs';
import { z } from 'zod';
import { ConfigError, envBoolean, loadConfig } from '../config';

/** How the Kafka clients secure their broker connections; both unset: plaintext, no authentication. */
export interface KafkaSecurity {
  /** TLS on every broker connection (KAFKA_SSL=true), with these options. */
  ssl?: ConnectionOptions;
  /** SASL authentication on every broker connection (KAFKA_SASL_MECHANISM and its credentials). */
  sasl?: SASLOptions;
}

export const KAFKA_SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;

const optionalString = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v));

/** The Kafka security variables; set halfway (credentials without a mechanism, a CA without TLS, ...) they fail the start. */
export const kafkaSecuritySchema = z
  .object({
    KAFKA_SSL: envBoolean(false),
    KAFKA_SSL_CA_FILE: optionalString(),
    KAFKA_SASL_MECHANISM: optionalString()
      .transform((v) => v?.toLowerCase())
      .pipe(z.enum(KAFKA_SASL_MECHANISMS, { errorMap: () => ({ message: `expected one of ${KAFKA_SASL_MECHANISMS.join(', ')}` }) }).optional()),
    KAFKA_SASL_USERNAME: optionalString(),
    KAFKA_SASL_PASSWORD: optionalString(),
  })
  .superRefine((c, ctx) => {
    if (c.KAFKA_SSL_CA_FILE && !c.KAFKA_SSL) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['KAFKA_SSL_CA_FILE'], message: 'set, but KAFKA_SSL is not true (the CA is for TLS connections to the brokers)' });
    }
    const credentials = { KAFKA_SASL_USERNAME: c.KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD: c.KAFKA_SASL_PASSWORD };
    if (c.KAFKA_SASL_MECHANISM) {
      for (const [name, value] of Object.entries(credentials)) {
        if (value === undefined) ctx.addIssue({ code: z.ZodIssueCode.custom, path: [name], message: `required with KAFKA_SASL_MECHANISM=${c.KAFKA_SASL_MECHANISM}` });
      }
    } else if (Object.values(credentials).some((value) => value !== undefined)) {
      const set = Object.keys(credentials).filter((name) => credentials[name as keyof typeof credentials] !== undefined);
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['KAFKA_SASL_MECHANISM'], message: `required with ${set.join(' and ')}: one of ${KAFKA_SASL_MECHANISMS.join(', ')}` });
    }
  });

/**
 * The Kafka clients' TLS and SASL settings from the environment (KAFKA_SSL, KAFKA_SSL_CA_FILE, KAFKA_SASL_MECHANISM,
 * KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD); a ConfigError naming each bad variable otherwise. With KAFKA_SSL alone the
 * brokers' certificates are checked against Node's CAs (NODE_EXTRA_CA_CERTS adds a private one); KAFKA_SSL_CA_FILE's
 * PEM certificates are trusted beside the public CAs.
 */
export function kafkaSecurityOf(env: Record<string, string | undefined> = process.env): KafkaSecurity {
  const config = loadConfig(kafkaSecuritySchema, env);
  const security: KafkaSecurity = {};
  if (config.KAFKA_SSL) {
    security.ssl = {};
    if (config.KAFKA_SSL_CA_FILE) security.ssl.ca = [...rootCertificates, readCaFile(config.KAFKA_SSL_CA_FILE)];
  }
  if (config.KAFKA_SASL_MECHANISM) {
    security.sasl = { mechanism: config.KAFKA_SASL_MECHANISM, username: config.KAFKA_SASL_USERNAME!, password: config.KAFKA_SASL_PASSWORD! } as SASLOptions;
  }
  return security;
}

function readCaFile(path: string): string {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`KAFKA_SSL_CA_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`]);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError([`KAFKA_SSL_CA_FILE: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`]);
  return pem;
}

/** How a Kafka client's connection is secured, for the log line that names the bus (no secrets). */
export function describeKafkaSecurity(security: KafkaSecurity): { tls: boolean; sasl?: string } {
  return { tls: security.ssl !== undefined, ...(security.sasl ? { sasl: security.sasl.mechanism } : {}) };
}

/**
 * The warning to log at start for a connection setting that is allowed but unsafe, or null: SASL PLAIN without TLS
 * (KAFKA_SASL_MECHANISM=plain, KAFKA_SSL not true) sends the user name and password in clear text on every broker
 * connection, readable by anyone on the path. Allowed (a SASL_PLAINTEXT listener on a private network, a test
 * broker), so a warning, not a ConfigError.
 */
export function kafkaSecurityWarning(security: KafkaSecurity): string | null {
  if (security.sasl?.mechanism === 'plain' && security.ssl === undefined) {
    return 'KAFKA_SASL_MECHANISM=plain without KAFKA_SSL=true: the Kafka user name and password cross the network in clear text on every broker connection; set KAFKA_SSL=true (a SASL_SSL listener), or use scram-sha-256/scram-sha-512, which never send the password';
  }
  return null;
}
