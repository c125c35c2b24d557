export { startSearch } from './main';
