import type { Router } from 'express';
import type { RouteDeps } from '../app';

/** Routes of this resource; filled in by its issue. */
export function registerSearchRoutes(_router: Router, _deps: RouteDeps): void {}
