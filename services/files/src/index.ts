export { startFiles } from './main';
