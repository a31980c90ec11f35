// A router of a few lines, as an app's router (React Router, Next.js's) does
// it: history.pushState on a link, popstate on back and forward. The library
// sees each URL change and sends its page view; the app does nothing for it.
import { useEffect, useState, type MouseEvent, type ReactNode } from 'react';

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const changed = () => setPath(window.location.pathname);
    window.addEventListener('popstate', changed);
    window.addEventListener('app:navigate', changed);
    return () => {
      window.removeEventListener('popstate', changed);
      window.removeEventListener('app:navigate', changed);
    };
  }, []);
  return path;
}

export function Link({ to, children }: { to: string; children: ReactNode }) {
  const go = (e: MouseEvent) => {
    e.preventDefault();
    window.history.pushState({}, '', to);
    window.dispatchEvent(new Event('app:navigate'));
  };
  return (
    <a href={to} onClick={go}>
      {children}
    </a>
  );
}
