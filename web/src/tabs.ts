/**
 * News for this browser's other tabs of the app (the same origin), so a tab left open follows what another tab did:
 * `session` after a sign-in, a sign-out, a profile change or a password reset (the `ai-editor` cookie is the browser's,
 * shared by every tab, so a sign-in as someone else there makes every tab act as that person), `notifications` after
 * marking notifications read. A BroadcastChannel: it never reaches the tab that sent it, and a browser without one
 * (Safari before 15.4) gets no news, only the checks a tab makes when it is shown again (../session.tsx).
 */
export type TabNews = 'session' | 'notifications';

const CHANNEL = 'card-library-tabs';

let channel: BroadcastChannel | null | undefined;

function open(): BroadcastChannel | null {
  if (channel === undefined) {
    try {
      channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : null;
    } catch {
      channel = null;
    }
  }
  return channel;
}

export function tellOtherTabs(news: TabNews): void {
  try {
    open()?.postMessage(news);
  } catch {
    // No news sent: the other tabs find out when they next ask the server.
  }
}

/** Calls `listener` with each piece of news another tab sends. Returns the unsubscribe function. */
export function onOtherTabs(listener: (news: TabNews) => void): () => void {
  const ch = open();
  if (!ch) return () => {};
  const onMessage = (e: MessageEvent) => {
    if (e.data === 'session' || e.data === 'notifications') listener(e.data);
  };
  ch.addEventListener('message', onMessage);
  return () => ch.removeEventListener('message', onMessage);
}
