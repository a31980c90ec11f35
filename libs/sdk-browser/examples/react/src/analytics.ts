// The one place the app initialises the library: a module, so it runs once
// however often components render (React's StrictMode renders twice), and on
// the client only (import it from client components; in Next.js, from a
// 'use client' module). The build defines the key and the API's address.
import { svc } from '@svc/sdk-browser';

declare const SVC_WRITE_KEY: string;
declare const SVC_API_HOST: string;

if (typeof window !== 'undefined') {
  svc.init({
    writeKey: SVC_WRITE_KEY,
    apiHost: SVC_API_HOST,
    // The banner's Reject stops capture (and clears the queue); a decision of an earlier visit holds at the next init().
    consentMode: 'enforced',
    // Page views on route changes come by themselves: the library follows
    // history.pushState, replaceState, popstate and hashchange (trackPages).
    flushAt: 1,
  });
}

export { svc };
