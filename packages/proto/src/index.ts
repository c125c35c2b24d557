export * as identity from './gen/identity/v1/identity';
export * as cards from './gen/cards/v1/cards';
export * as search from './gen/search/v1/search';
export * as files from './gen/files/v1/files';
export * as notifications from './gen/notifications/v1/notifications';
export * as events from './gen/events/v1/events';
export * as health from './gen/grpc/health/v1/health';
