export { startAllInOne, type AllInOne } from './main';
