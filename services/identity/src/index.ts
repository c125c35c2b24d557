export { startIdentity } from './main';
