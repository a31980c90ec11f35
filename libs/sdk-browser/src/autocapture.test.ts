import { describe, expect, it } from '@jest/globals';
import { CLICK_EVENT, clickEvent, isCardNumber, isSensitiveElement, isSSN, watchRoutes } from './autocapture';
import type { ElementLike } from './dom';
import { createRedactor } from './redaction';
import { FakeClock, FakeTab } from './test-support/fake-env';

/** A minimal element: attributes, text, parent. */
function el(tagName: string, attrs: Record<string, string> = {}, text = '', parent: ElementLike | null = null, extra: Partial<ElementLike> = {}): ElementLike {
  return {
    tagName: tagName.toUpperCase(),
    id: attrs.id ?? '',
    textContent: text,
    parentElement: parent,
    getAttribute: (name) => attrs[name] ?? null,
    hasAttribute: (name) => name in attrs,
    ...extra,
  };
}

const opts = { captureLinkQueryParams: false, redact: createRedactor() };

describe('click capture', () => {
  it('captures links with element type, text, id, class and origin+path URL', () => {
    const a = el('a', { id: 'buy', class: 'btn  primary', href: '/p?token=x' }, '  Buy\n now ', null, { href: 'https://shop.example/p?token=x#top' });
    expect(clickEvent(a, opts)).toEqual({
      event: CLICK_EVENT,
      properties: { element_type: 'a', element_text: 'Buy now', element_id: 'buy', element_class: 'btn primary', link_url: 'https://shop.example/p' },
    });
    expect(clickEvent(a, { ...opts, captureLinkQueryParams: true })?.properties.link_url).toBe('https://shop.example/p?token=<redacted>#top');
  });

  it('attributes a click inside a button or link to it', () => {
    const button = el('button', { class: 'cta' }, 'Sign up');
    const span = el('span', {}, 'Sign up', button);
    expect(clickEvent(span, opts)?.properties).toEqual({ element_type: 'button', element_text: 'Sign up', element_class: 'cta' });
    expect(clickEvent(el('div', {}, 'plain'), opts)).toBeNull();
  });

  it('names the event from data-svc-track', () => {
    const div = el('div', { 'data-svc-track': 'Hero CTA' }, 'Go');
    expect(clickEvent(el('span', {}, 'Go', div), opts)).toEqual({ event: 'Hero CTA', properties: { element_type: 'div', element_text: 'Go' } });
  });

  it('skips anything with data-svc-no-capture on the element or an ancestor', () => {
    const section = el('section', { 'data-svc-no-capture': '' });
    expect(clickEvent(el('button', {}, 'x', section), opts)).toBeNull();
    expect(clickEvent(el('a', { 'data-svc-no-capture': 'true', href: '/x' }, 'x'), opts)).toBeNull();
  });

  it('never captures sensitive fields, and omits bare card or SSN text', () => {
    expect(clickEvent(el('input', { type: 'password', 'data-svc-track': 'pw' }), opts)).toBeNull();
    expect(clickEvent(el('input', { type: 'text', 'data-svc-track': 'field' }), opts)).toBeNull();
    expect(clickEvent(el('input', { type: 'submit', name: 'card_number' }, '', null, { value: 'Pay' }), opts)).toBeNull();
    expect(clickEvent(el('button', { id: 'card' }, 'Pay'), opts)?.properties).toEqual({ element_type: 'button', element_text: 'Pay', element_id: 'card' });
    expect(clickEvent(el('input', { type: 'submit' }, '', null, { value: 'Send' }), opts)?.properties).toEqual({ element_type: 'input', element_text: 'Send' });
    expect(clickEvent(el('button', {}, '4111 1111 1111 1111'), opts)?.properties.element_text).toBeUndefined();
    expect(clickEvent(el('button', {}, '078-05-1120'), opts)?.properties.element_text).toBeUndefined();
    expect(clickEvent(el('button', {}, 'Order 4111'), opts)?.properties.element_text).toBe('Order 4111');
  });

  it('keeps only the scheme of non-web links and nothing of javascript: ones', () => {
    expect(clickEvent(el('a', {}, 'Mail', null, { href: 'mailto:a@b.example' }), opts)?.properties.link_url).toBe('mailto:');
    expect(clickEvent(el('a', {}, 'Run', null, { href: 'javascript:void(0)' }), opts)?.properties.link_url).toBeUndefined();
  });

  it('detects cards, SSNs and sensitive elements', () => {
    expect(isCardNumber('4242424242424242')).toBe(true);
    expect(isCardNumber('4242-4242-4242-4242')).toBe(true);
    expect(isCardNumber('4242424242424241')).toBe(false);
    expect(isCardNumber('12345')).toBe(false);
    expect(isSSN('078051120')).toBe(true);
    expect(isSSN('078-05 1120')).toBe(false);
    expect(isSensitiveElement(el('textarea'))).toBe(true);
    expect(isSensitiveElement(el('button', { autocomplete: 'cc-number' }))).toBe(true);
    expect(isSensitiveElement(el('button', { id: 'save' }))).toBe(false);
  });
});

describe('route watching', () => {
  it('reports pushState, replaceState, popstate and hashchange, a tick later (so the new title is set)', async () => {
    const clock = new FakeClock();
    const tab = new FakeTab({ clock });
    const seen: string[] = [];
    watchRoutes(tab.win, () => seen.push(tab.win.location?.href ?? ''));
    tab.win.history?.pushState({}, '', '/a');
    expect(seen).toEqual([]);
    await clock.advance(0);
    tab.win.history?.replaceState({}, '', '/b');
    await clock.advance(0);
    tab.navigate('#c');
    tab.win.dispatch('hashchange');
    tab.win.dispatch('popstate');
    await clock.advance(0);
    expect(seen).toEqual(['https://shop.example/a', 'https://shop.example/b', 'https://shop.example/b#c', 'https://shop.example/b#c']);
  });
});
