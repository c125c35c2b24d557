export * from './mongo-connection';
export * from './mongo-outbox';
export * from './mongo-leases';
