export { startGateway } from './main';
export { buildOpenApiDocument, OPERATIONS, toOpenApiPath, type OperationSpec } from './openapi/document';
