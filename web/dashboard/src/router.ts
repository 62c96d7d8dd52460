import { useEffect, useState } from 'preact/hooks';

const BASE = '/dashboard';

/** The page's path below /dashboard, following pushState and the back button. */
export function useRoute(): string {
  const [route, setRoute] = useState(current());
  useEffect(() => {
    const update = () => setRoute(current());
    addEventListener('popstate', update);
    addEventListener('montage:navigate', update);
    return () => {
      removeEventListener('popstate', update);
      removeEventListener('montage:navigate', update);
    };
  }, []);
  return route;
}

function current(): string {
  return location.pathname.slice(BASE.length).replace(/\/+$/, '') || '/';
}

export function navigate(to: string): void {
  history.pushState(null, '', `${BASE}${to}`);
  dispatchEvent(new Event('montage:navigate'));
}

/** Moves to `to` in place of the current entry: an old address does not stay in the history. */
export function redirect(to: string): void {
  history.replaceState(null, '', `${BASE}${to}${location.search}`);
  dispatchEvent(new Event('montage:navigate'));
}

/** Props for an <a> that moves within the page without reloading it (and stays a real link). */
export function link(to: string) {
  return {
    href: `${BASE}${to}`,
    onClick: (event: MouseEvent) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      navigate(to);
    },
  };
}
