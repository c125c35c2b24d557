export { startGateway } from './main';
