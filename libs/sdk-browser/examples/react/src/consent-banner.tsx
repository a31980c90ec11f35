// The consent banner: the library ships no UI, only the decisions. Shown
// until the visitor decides; the decision is kept (localStorage) and sent to
// the consent API; in enforced mode a Reject stops capture.
import { useState } from 'react';
import { svc } from './analytics';

export function ConsentBanner() {
  const [open, setOpen] = useState(() => !svc.consent.hasConsent('analytics'));
  if (!open) return null;
  const decide = (accept: boolean) => {
    if (accept) svc.consent.grant('analytics');
    else svc.consent.deny('analytics');
    setOpen(false);
  };
  return (
    <div role="dialog" aria-label="Cookies">
      <p>We measure how this shop is used.</p>
      <button id="accept" onClick={() => decide(true)}>
        Accept
      </button>
      <button id="reject" onClick={() => decide(false)}>
        Reject
      </button>
    </div>
  );
}
