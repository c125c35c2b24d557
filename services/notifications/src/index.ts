export { startNotifications } from './main';
