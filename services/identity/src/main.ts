import { join } from 'node:path';
import { connectMongo, createLogger, EngineReadinessMonitor, grpcServerSettingsFrom, keepDataDirPrivate, loadConfig, lockServiceDataDir, mongoEngineCheck, readinessSettingsFrom, startFailureLog, startGrpcServer, stopOnSignals, watchServiceDataDirSpace, type EngineCheck, type RunningService } from '@cards/platform';
import { identity } from '@cards/proto';
import { IdentityService } from './application/identity-service';
import { jwtSecretFrom } from './adapters/crypto/jwt-secret-file';
import { JwtTokenSigner } from './adapters/crypto/jwt-token-signer';
import { ScryptPasswordHasher } from './adapters/crypto/scrypt-password-hasher';
import { EmlFileMailer, SmtpMailer } from './adapters/mail/nodemailer-mailer';
import { MongoIdentityRepository } from './adapters/mongo/mongo-identity-repository';
import { SqliteIdentityRepository } from './adapters/sqlite/sqlite-identity-repository';
import { identityConfigSchema, refuseIdentityEmbeddedStores } from './config';
import { identityHandlers } from './grpc/identity-handlers';
import type { IdentityRepository } from './domain/ports';

/** The engines that, every one set, keep all of this service's data off DATA_DIR (the data dir's set-up is skipped then). */
const ENGINE_VARIABLES = ['MONGO_URL', 'JWT_SECRET', 'SMTP_URL'] as const;

/** Composition root of the identity service. */
export async function startIdentity(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  refuseIdentityEmbeddedStores(env);
  const config = loadConfig(identityConfigSchema, env);
  const serverSettings = grpcServerSettingsFrom(env);
  const logger = createLogger('identity');
  // DATA_DIR 0700 and the umask 077 before any store opens (docs/security.md, "The data dir is private").
  keepDataDirPrivate({ env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  // One process on the data dir's embedded store (docs/decisions.md): a second one refuses to start, naming the holder.
  const lock = !config.MONGO_URL ? lockServiceDataDir(config.DATA_DIR, 'identity') : undefined;
  let repository: IdentityRepository;
  const engines: EngineCheck[] = [];
  if (config.MONGO_URL) {
    const connection = await connectMongo({ url: config.MONGO_URL, database: 'identity', logger });
    engines.push(mongoEngineCheck(connection));
    repository = await MongoIdentityRepository.open(connection);
  } else {
    logger.info('MONGO_URL not set: using the embedded SQLite store');
    repository = new SqliteIdentityRepository(join(config.DATA_DIR, 'identity', 'identity.db'), { logger });
  }
  const mailFiles = config.SMTP_URL ? null : new EmlFileMailer(join(config.DATA_DIR, 'mail'), config.MAIL_FROM);
  const mailer = mailFiles ?? new SmtpMailer(config.SMTP_URL!, config.MAIL_FROM);
  if (!config.SMTP_URL) logger.info({ directory: join(config.DATA_DIR, 'mail') }, 'SMTP_URL not set: writing e-mail as .eml files');
  const service = new IdentityService({
    repository,
    mailer,
    hasher: new ScryptPasswordHasher(config.PASSWORD_HASH_COST),
    tokens: new JwtTokenSigner(jwtSecretFrom(config.DATA_DIR, config.JWT_SECRET)),
    publicUrl: config.PUBLIC_URL,
    logger,
  });
  // Expired sessions, invitations and reset links, and old .eml files, are deleted at start and every few minutes.
  const sweep = async () => {
    try {
      const deleted = await service.deleteExpired();
      if (deleted > 0) logger.info({ deleted }, 'deleted expired sessions, invitations and reset links');
      const pruned = mailFiles ? await mailFiles.prune(new Date(Date.now() - config.MAIL_DIR_RETENTION_HOURS * 3_600_000)) : 0;
      if (pruned > 0) logger.info({ pruned }, 'deleted old .eml files');
    } catch (err) {
      logger.warn({ err }, 'identity sweep failed; next at the next interval');
    }
  };
  let sweeping = sweep();
  await sweeping;
  const sweepTimer = setInterval(() => {
    sweeping = sweeping.then(sweep);
  }, config.IDENTITY_SWEEP_INTERVAL_MINUTES * 60_000);
  sweepTimer.unref();
  const grpc = await startGrpcServer({
    name: 'identity.v1.IdentityService',
    host: config.IDENTITY_GRPC_HOST,
    port: config.IDENTITY_GRPC_PORT,
    logger,
    ...serverSettings,
    readiness: new EngineReadinessMonitor({ checks: engines, logger, ...readinessSettingsFrom(env) }),
    register: (server) => server.add(identity.IdentityServiceDefinition, identityHandlers(service)),
  });
  // The free space of DATA_DIR's file system (a gauge on /metrics, a warning below DATA_DIR_FREE_WARNING_MB) while this
  // service keeps something there; once per process however many services it runs (docs/deploy.md, a full disk).
  const space = watchServiceDataDirSpace({ role: 'identity', env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  return {
    name: 'identity',
    address: grpc.address,
    async stop() {
      space.stop();
      clearInterval(sweepTimer);
      await grpc.shutdown();
      await sweeping;
      await service.mailSent();
      await mailer.close();
      await repository.close();
      lock?.release();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('identity');
  startIdentity()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      // A full disk names itself and the data dir, instead of the raw SqliteError of whichever store wrote first.
      const { fields, msg } = startFailureLog(err, { otherwise: 'identity failed to start' });
      logger.fatal(fields, msg);
      process.exit(1);
    });
}
