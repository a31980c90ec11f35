import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { svc } from './analytics';
import { ConsentBanner } from './consent-banner';
import { Link, usePath } from './router';

const PAGES: Record<string, string> = { '/': 'Home', '/pricing': 'Pricing', '/checkout': 'Checkout' };

function App() {
  const path = usePath();
  return (
    <>
      <ConsentBanner />
      <nav>
        <Link to="/">Home</Link> <Link to="/pricing">Pricing</Link> <Link to="/checkout">Checkout</Link>
      </nav>
      <h1>{PAGES[path] ?? 'Not found'}</h1>
      {path === '/checkout' && (
        <button id="buy" onClick={() => svc.track('Order Completed', { value: 42, currency: 'EUR' })}>
          Buy
        </button>
      )}
    </>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
