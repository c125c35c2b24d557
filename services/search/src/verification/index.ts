export { startVerificationWorker, type VerificationWorker, type VerificationWorkerDeps } from './worker';
export { verificationConfigFields, verificationConfigSchema, type VerificationConfig } from './config';
