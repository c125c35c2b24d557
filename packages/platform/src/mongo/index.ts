export * from './mongo-connection';
export * from './mongo-outbox';
export * from './mongo-leases';
export * from './mongo-kept-keys';
