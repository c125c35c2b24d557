export * from './mongo-connection';
export * from './mongo-outbox';
