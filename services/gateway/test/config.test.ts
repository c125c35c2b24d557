import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import express from 'express';
import { parse } from 'yaml';
import { ConfigError, loadConfig } from '@cards/platform';
import { cookieSecureFrom, GATEWAY_COUNT_LIMITS, gatewayConfigSchema } from '../src/config';

const trustProxy = (value: string | undefined) => loadConfig(gatewayConfigSchema, { TRUST_PROXY: value }).TRUST_PROXY;

describe('gateway config: TRUST_PROXY', () => {
  it('takes false, true, a hop count or the proxies\' addresses', () => {
    expect(trustProxy(undefined)).toBe(false);
    expect(trustProxy('false')).toBe(false);
    expect(trustProxy('true')).toBe(true);
    // Any case, as the other booleans (True was refused as an address).
    expect([trustProxy('True'), trustProxy(' YES '), trustProxy('False'), trustProxy('NO')]).toEqual([true, true, false, false]);
    expect(trustProxy('1')).toBe(1);
    expect(trustProxy('2')).toBe(2);
    expect(trustProxy('10.0.0.0/8, fd00::/8,loopback')).toEqual(['10.0.0.0/8', 'fd00::/8', 'loopback']);
    expect(trustProxy('10.0.0.1/32,::1/128')).toEqual(['10.0.0.1/32', '::1/128']);
  });

  it('accepts only what express takes, so a bad value never gets past the config to fail while the app is built', () => {
    for (const value of ['false', 'true', '1', '10.0.0.0/8, fd00::/8,loopback', '10.0.0.1/32,::1/128']) {
      expect(() => express().set('trust proxy', trustProxy(value))).not.toThrow();
    }
  });

  it('stops the start naming the variable for anything else', () => {
    for (const bad of ['ingress', '10.0.0.300', '10.0.0.0/8/8', '1.5', '10.0.0.0/33', 'fd00::/129']) {
      expect(() => trustProxy(bad)).toThrow(ConfigError);
      expect(() => trustProxy(bad)).toThrow(/TRUST_PROXY/);
    }
  });

  it('counts at most 10 hops: a larger count trusted the entries a client wrote itself, as true does', () => {
    expect(trustProxy('10')).toBe(10);
    for (const bad of ['11', '1000', '99999999999999999999']) {
      expect(() => trustProxy(bad)).toThrow(/TRUST_PROXY: a hop count must be at most 10/);
    }
  });
});

describe('gateway config: COOKIE_SECURE', () => {
  const secure = (env: Record<string, string | undefined>) => cookieSecureFrom(loadConfig(gatewayConfigSchema, env));

  it('is read as every boolean (1/0, yes/no, any case), and unset, empty or spaces follows PUBLIC_URL', () => {
    for (const on of ['true', 'TRUE', '1', 'yes', ' Yes ']) expect(secure({ COOKIE_SECURE: on })).toBe(true);
    for (const off of ['false', 'False', '0', 'no']) expect(secure({ COOKIE_SECURE: off, PUBLIC_URL: 'https://cards.example.com' })).toBe(false);
    for (const unset of [{}, { COOKIE_SECURE: '' }, { COOKIE_SECURE: ' ' }]) {
      expect(secure({ ...unset, PUBLIC_URL: 'https://cards.example.com' })).toBe(true);
      expect(secure({ ...unset, PUBLIC_URL: 'http://localhost:8090' })).toBe(false);
    }
  });

  it('stops the start naming the variable for anything else', () => {
    for (const bad of ['auto', 'on', 'secure']) expect(() => secure({ COOKIE_SECURE: bad })).toThrow(/COOKIE_SECURE: expected true or false \(also 1\/0, yes\/no\)/);
  });
});

describe('gateway config: SHUTDOWN_DRAIN_MS', () => {
  const drain = (value: string | undefined) => loadConfig(gatewayConfigSchema, { SHUTDOWN_DRAIN_MS: value }).SHUTDOWN_DRAIN_MS;

  it('takes up to ten minutes, as the gRPC services do (the all-in-one reads one value for all of them)', () => {
    expect(drain(undefined)).toBe(20_000);
    expect(drain('0')).toBe(0);
    expect(drain('600000')).toBe(600_000);
    for (const bad of ['600001', '4294967296', '-1', 'soon']) expect(() => drain(bad)).toThrow(/SHUTDOWN_DRAIN_MS/);
  });
});

describe('gateway config: the minimum upload body rate', () => {
  const rate = (env: Record<string, string>) => {
    const config = loadConfig(gatewayConfigSchema, env);
    return [config.UPLOAD_BODY_GRACE_MS, config.UPLOAD_MIN_BYTES_PER_SECOND, config.UPLOAD_BODY_RATE_WINDOW_MS];
  };

  it('defaults to 16 KiB/s averaged over 10 s, checked from 10 s after admission; 0 bytes/s turns it off', () => {
    expect(rate({})).toEqual([10_000, 16_384, 10_000]);
    expect(rate({ UPLOAD_BODY_GRACE_MS: '0', UPLOAD_MIN_BYTES_PER_SECOND: '0', UPLOAD_BODY_RATE_WINDOW_MS: '100' })).toEqual([0, 0, 100]);
  });

  it('stops the start naming the variable for a value it cannot use', () => {
    for (const [name, bad] of [
      ['UPLOAD_MIN_BYTES_PER_SECOND', '-1'],
      ['UPLOAD_MIN_BYTES_PER_SECOND', '16k'],
      ['UPLOAD_BODY_GRACE_MS', '300001'],
      ['UPLOAD_BODY_RATE_WINDOW_MS', '99'],
      ['UPLOAD_BODY_RATE_WINDOW_MS', '300001'],
    ] as const) {
      expect(() => rate({ [name]: bad })).toThrow(ConfigError);
      expect(() => rate({ [name]: bad })).toThrow(new RegExp(name));
    }
  });
});

describe('gateway config: JSON_BODY_LIMIT', () => {
  const limit = (value: string | undefined) => loadConfig(gatewayConfigSchema, { JSON_BODY_LIMIT: value }).JSON_BODY_LIMIT;

  it('takes a size as the body parser reads it: bytes, or a number with kb, mb, gb, tb or pb (1024s)', () => {
    expect(limit(undefined)).toBe('1mb');
    for (const good of ['1mb', '512kb', '2 MB', '1.5mb', '1048576']) expect(limit(good)).toBe(good);
  });

  // The body parser refuses a value it does not know ('abc', '') with a TypeError while the app is built, naming no
  // variable, and reads others by their leading digits ('1MiB', '2e6', '1 m': one or two bytes, so every body was 413):
  // those started the gateway without a word.
  it('stops the start naming the variable for anything else', () => {
    for (const bad of ['abc', '', '1MiB', '2e6', '1 m', '-1mb', '0', '0kb', 'mb', '0.0001kb', '0.5']) {
      expect(() => limit(bad)).toThrow(ConfigError);
      expect(() => limit(bad)).toThrow(/JSON_BODY_LIMIT/);
    }
  });
});

describe('gateway config: RATE_LIMIT_AUTH_PER_IP and RATE_LIMIT_AUTH_PER_EMAIL', () => {
  it('stops the start at 0, which the rate limiter reads as "block everything" (every login 429), naming the variable', () => {
    for (const name of ['RATE_LIMIT_AUTH_PER_IP', 'RATE_LIMIT_AUTH_PER_EMAIL']) {
      expect(() => loadConfig(gatewayConfigSchema, { [name]: '0' })).toThrow(ConfigError);
      expect(() => loadConfig(gatewayConfigSchema, { [name]: '0' })).toThrow(new RegExp(`${name}: must be at least 1`));
      expect((loadConfig(gatewayConfigSchema, { [name]: '1' }) as Record<string, unknown>)[name]).toBe(1);
    }
    expect(loadConfig(gatewayConfigSchema, {})).toMatchObject({ RATE_LIMIT_AUTH_PER_IP: 600, RATE_LIMIT_AUTH_PER_EMAIL: 10 });
  });
});

describe('gateway config: durations that reach a timer', () => {
  const names = ['GRPC_DEADLINE_MS', 'UPLOAD_QUEUE_WAIT_MS', 'HTTP_REQUEST_QUEUE_WAIT_MS', 'FILE_READ_CALL_MS', 'FILE_READ_IDLE_MS', 'RATE_LIMIT_MAIL_WINDOW_MS'];

  it("stop the start above 2147483647 ms (Node's timers fire a longer delay after 1 ms: a GRPC_DEADLINE_MS of 3000000000 answered every request 504), naming the variable and the longest", () => {
    for (const name of names) {
      expect(() => loadConfig(gatewayConfigSchema, { [name]: '3000000000' })).toThrow(ConfigError);
      expect(() => loadConfig(gatewayConfigSchema, { [name]: '3000000000' })).toThrow(new RegExp(`${name}: must be at most 2147483647`));
      expect((loadConfig(gatewayConfigSchema, { [name]: '2147483647' }) as Record<string, unknown>)[name]).toBe(2_147_483_647);
    }
  });

  it('GRPC_DEADLINE_MS stops the start at 0 (every call would fail at once) and below 100; spaces only are the default', () => {
    expect(() => loadConfig(gatewayConfigSchema, { GRPC_DEADLINE_MS: '0' })).toThrow(/GRPC_DEADLINE_MS: must be at least 100/);
    expect(loadConfig(gatewayConfigSchema, { GRPC_DEADLINE_MS: ' ' }).GRPC_DEADLINE_MS).toBe(10_000);
    expect(loadConfig(gatewayConfigSchema, { GRPC_DEADLINE_MS: '100' }).GRPC_DEADLINE_MS).toBe(100);
  });
});

describe('gateway config: PORT', () => {
  it('stops the start above 65535, naming PORT (Node refused it only when listening, naming no variable)', () => {
    expect(() => loadConfig(gatewayConfigSchema, { PORT: '70000' })).toThrow(/PORT: must be a port from 0 to 65535/);
    expect(loadConfig(gatewayConfigSchema, { PORT: '4208' }).PORT).toBe(4208);
  });
});

describe('gateway config: PUBLIC_URL', () => {
  it('stops the start when it is not http(s) with a host ("cards.example.com:443" parsed as the scheme "cards.example.com:": no Secure cookie), naming it', () => {
    for (const bad of ['cards.example.com:443', 'ftp://cards.example.com', 'http://']) {
      expect(() => loadConfig(gatewayConfigSchema, { PUBLIC_URL: bad })).toThrow(/PUBLIC_URL: /);
    }
    expect(() => loadConfig(gatewayConfigSchema, { PUBLIC_URL: 'cards.example.com:443' })).toThrow(/PUBLIC_URL: must be an http:\/\/ or https:\/\/ URL with a host/);
    expect(loadConfig(gatewayConfigSchema, { PUBLIC_URL: 'https://cards.example.com' }).PUBLIC_URL).toBe('https://cards.example.com');
    expect(loadConfig(gatewayConfigSchema, {}).PUBLIC_URL).toBe('http://localhost:8090');
  });
});

describe('gateway config: MAX_FILE_BYTES', () => {
  it('stops the start at 0 (a limit of 0 bytes answered every upload 413; it is no "no limit"), naming it', () => {
    expect(() => loadConfig(gatewayConfigSchema, { MAX_FILE_BYTES: '0' })).toThrow(/MAX_FILE_BYTES: must be at least 1/);
    expect(loadConfig(gatewayConfigSchema, {}).MAX_FILE_BYTES).toBe(20 * 1024 * 1024);
  });
});

describe('gateway config: HTTP_ANSWER_IDLE_MS', () => {
  const idle = (value: string | undefined) => loadConfig(gatewayConfigSchema, { HTTP_ANSWER_IDLE_MS: value }).HTTP_ANSWER_IDLE_MS;

  it('is 30 s by default and takes 1 s to 10 min', () => {
    expect(idle(undefined)).toBe(30_000);
    expect(idle('')).toBe(30_000);
    expect(idle('1000')).toBe(1_000);
    expect(idle('600000')).toBe(600_000);
  });

  // 0 would cut answers at once or never (socket.setTimeout(0) is no timeout); hours hold slots for good again.
  it('stops the start naming the variable outside that range', () => {
    for (const bad of ['0', '999', '600001', '86400000', 'abc', '-1']) {
      expect(() => idle(bad)).toThrow(ConfigError);
      expect(() => idle(bad)).toThrow(/HTTP_ANSWER_IDLE_MS/);
    }
  });
});

describe("gateway config: upper bounds of the gateway's counts (GATEWAY_COUNT_LIMITS)", () => {
  it('stops the start above each bound (a huge value turned the bound off while reading like one), naming the variable and the range', () => {
    const expected: Record<string, [min: number, max: number]> = {
      UPLOADS_AT_ONCE: [1, 64],
      UPLOAD_QUEUE: [0, 10_000],
      FILE_READS_AT_ONCE: [1, 4_096],
      FILE_READS_PER_CLIENT: [1, 4_096],
      HTTP_MAX_CONNECTIONS: [0, 1_000_000],
      HTTP_REQUESTS_AT_ONCE: [1, 1_000_000],
      HTTP_HEAVY_REQUESTS_AT_ONCE: [1, 1_000_000],
      HTTP_REQUEST_QUEUE: [0, 10_000],
      HTTP_REQUESTS_PER_CLIENT: [1, 1_000_000],
    };
    expect(Object.keys(GATEWAY_COUNT_LIMITS).sort()).toEqual(Object.keys(expected).sort());
    for (const [name, [min, max]] of Object.entries(expected)) {
      const load = (value: string) => loadConfig(gatewayConfigSchema, { [name]: value }) as unknown as Record<string, number>;
      expect({ name, atMax: load(String(max))[name], atMin: load(String(min))[name] }).toEqual({ name, atMax: max, atMin: min });
      for (const tooMany of [String(max + 1), '1000000000']) {
        expect(() => load(tooMany)).toThrow(ConfigError);
        expect(() => load(tooMany)).toThrow(new RegExp(`${name}: must be from ${min} to ${max} \\(`));
      }
    }
  });

  it("accepts the defaults, the chart's values (values.yaml, ci-values.yaml) and the test systems' settings", () => {
    const defaults = loadConfig(gatewayConfigSchema, {});
    expect(defaults).toMatchObject({ UPLOADS_AT_ONCE: 1, UPLOAD_QUEUE: 16, FILE_READS_AT_ONCE: 16, FILE_READS_PER_CLIENT: 4, HTTP_MAX_CONNECTIONS: 10_000, HTTP_REQUESTS_AT_ONCE: 64, HTTP_HEAVY_REQUESTS_AT_ONCE: 8, HTTP_REQUEST_QUEUE: 512, HTTP_REQUESTS_PER_CLIENT: 64 });
    for (const file of ['deploy/k8s/values.yaml', 'deploy/k8s/ci-values.yaml']) {
      const values = parse(readFileSync(join(__dirname, '../../..', file), 'utf8')) as { components?: { gateway?: { env?: Record<string, unknown> } } };
      const env = Object.fromEntries(Object.entries(values.components?.gateway?.env ?? {}).map(([k, v]) => [k, String(v)]));
      expect({ file, loads: (() => (loadConfig(gatewayConfigSchema, env), true))() }).toEqual({ file, loads: true });
    }
    // The e2e systems' (test/support/service.ts), and the benchmarks' request bound set out of reach (docs/benchmarks.md).
    const testSystems = readFileSync(join(__dirname, '../../../test/support/service.ts'), 'utf8');
    const perClient = /^\s+HTTP_REQUESTS_PER_CLIENT: '(\d+)',$/m.exec(testSystems)?.[1];
    expect(perClient).toBeDefined();
    expect(loadConfig(gatewayConfigSchema, { HTTP_REQUESTS_PER_CLIENT: perClient }).HTTP_REQUESTS_PER_CLIENT).toBe(Number(perClient));
    const outOfReach = { HTTP_REQUESTS_AT_ONCE: '1000000', HTTP_HEAVY_REQUESTS_AT_ONCE: '1000000', HTTP_REQUESTS_PER_CLIENT: '1000000' };
    expect(loadConfig(gatewayConfigSchema, outOfReach)).toMatchObject({ HTTP_REQUESTS_AT_ONCE: 1_000_000, HTTP_HEAVY_REQUESTS_AT_ONCE: 1_000_000, HTTP_REQUESTS_PER_CLIENT: 1_000_000 });
  });
});
