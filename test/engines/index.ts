export * from './engine-support';
export * from './kafka';
export * from './mongo';
export * from './suite';
export * from './elasticsearch';
