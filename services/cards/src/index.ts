export { startCards } from './main';
