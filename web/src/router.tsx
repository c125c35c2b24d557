import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** A small History-API router: the gateway answers every non-/api path with index.html. */
const listeners = new Set<() => void>();
let navigated = false;

/** True once the person has moved inside the app (not on the first page load). */
export function hasNavigated(): boolean {
  return navigated;
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  return { path: window.location.pathname, query: new URLSearchParams(window.location.search) };
}

/**
 * A page with unsaved changes (the card form) asks before the app leaves it: `question` answers the confirmation to
 * show, or null when there is nothing to lose. One guard at a time; returns its removal.
 */
interface LeaveGuard {
  question(): string | null;
  /** Called when the person confirmed leaving: the changes are discarded. */
  discard(): void;
}
let leaveGuard: LeaveGuard | null = null;

export function guardLeaving(guard: LeaveGuard): () => void {
  leaveGuard = guard;
  return () => {
    if (leaveGuard === guard) leaveGuard = null;
  };
}

/** True when the page may be left: no guard, nothing to lose, or the person confirms (and the changes go). */
function mayLeave(): boolean {
  const guard = leaveGuard;
  const question = guard?.question();
  if (!guard || !question) return true;
  if (!window.confirm(question)) return false;
  leaveGuard = null;
  guard.discard();
  return true;
}

// The address shown, to go back to when a Back press is refused.
let shownUrl = window.location.pathname + window.location.search + window.location.hash;

export function navigate(to: string, { replace = false, force = false } = {}): void {
  if (!force && !mayLeave()) return;
  shownUrl = to;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  navigated = true;
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => {
  if (!mayLeave()) {
    // The browser has already moved: put the page's address back (the page itself never changed).
    history.pushState(null, '', shownUrl);
    return;
  }
  shownUrl = window.location.pathname + window.location.search + window.location.hash;
  navigated = true;
  for (const l of listeners) l();
});

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return loc;
}

/**
 * Whether the component calling it is still on the page. An action's follow-up navigation (a save opening the saved
 * card, a deletion going to the list) asks it first: when the action ends after the person moved on (a link, Back,
 * straight to another card's or collection's page), the page is no longer the one the action was pressed on, and
 * moving them again would take them away from where they are now, past that page's unsaved changes (`force`).
 */
export function useStillShown(): () => boolean {
  const shown = useRef(true);
  useEffect(() => {
    shown.current = true;
    return () => {
      shown.current = false;
    };
  }, []);
  return useCallback(() => shown.current, []);
}

/** Matches `/card/:id` style patterns; returns the named segments or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/').filter(Boolean);
  const s = path.split('/').filter(Boolean);
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const part = p[i]!;
    const value = s[i]!;
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(value);
    else if (part !== value) return null;
  }
  return params;
}

/** An in-app link: a real <a href> (keyboard, middle-click, copy link) that navigates without reloading. */
export function Link({ href, children, ...rest }: { href: string; children: ComponentChildren } & JSX.HTMLAttributes<HTMLAnchorElement>) {
  return (
    <a
      href={href}
      {...rest}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
