import type { ElementLike, HistoryLike, WindowLike } from './dom';
import type { Redactor } from './redaction';
import type { Properties } from './types';

/** Default event name of an auto-captured click (an element's data-svc-track names it otherwise). */
export const CLICK_EVENT = '$click';
export const NO_CAPTURE_ATTR = 'data-svc-no-capture';
export const TRACK_ATTR = 'data-svc-track';
const MAX_TEXT = 255;
const MAX_DEPTH = 50;

const BUTTON_INPUTS = ['button', 'submit', 'reset', 'image'];
const SENSITIVE_NAME = /pass|pwd|secret|token|otp|ssn|social.?sec|card|cc.?(num|cvc|cvv|exp|csc)|cvv|cvc|csc|iban|routing|account.?num/i;

const attr = (el: ElementLike, name: string): string | null => (el.getAttribute ? el.getAttribute(name) : null);
const tag = (el: ElementLike): string => (el.tagName ?? '').toLowerCase();

/** True when digits (spaces and dashes allowed) form a payment card number: 13 to 19 digits passing Luhn. */
export function isCardNumber(text: string): boolean {
  if (!/^\d[\d -]{11,22}\d$/.test(text)) return false;
  const digits = text.replace(/[ -]/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = +digits.charAt(digits.length - 1 - i);
    if (i % 2) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

/** US social security number shape: 123-45-6789 or 123456789. */
export const isSSN = (text: string): boolean => /^\d{3}([- ]?)\d{2}\1\d{4}$/.test(text);

/**
 * Form fields whose content must never be captured: textarea, select, every
 * input that is not a button, any field autocompleted as a card, password or
 * one-time code, and button inputs named like a password, card, SSN or secret.
 * (Links and buttons are labels: only their text is checked, for card and SSN.)
 */
export function isSensitiveElement(el: ElementLike): boolean {
  const t = tag(el);
  const type = (attr(el, 'type') ?? el.type ?? '').toLowerCase();
  if (t === 'textarea' || t === 'select' || (t === 'input' && !BUTTON_INPUTS.includes(type))) return true;
  if (/^cc-|password|one-time-code/.test((attr(el, 'autocomplete') ?? '').toLowerCase())) return true;
  return t === 'input' && SENSITIVE_NAME.test(`${attr(el, 'name') ?? ''} ${el.id || attr(el, 'id') || ''}`);
}

const isActionable = (el: ElementLike): boolean => {
  const t = tag(el);
  return t === 'a' || t === 'button' || (t === 'input' && BUTTON_INPUTS.includes((attr(el, 'type') ?? el.type ?? '').toLowerCase())) || attr(el, 'role') === 'button' || attr(el, TRACK_ATTR) !== null;
};

const clean = (text: string | null | undefined): string => (text ?? '').replace(/\s+/g, ' ').trim().slice(0, MAX_TEXT);

/**
 * The auto-captured click for a click on `target`: the nearest link, button or
 * data-svc-track element at or above it, or null when there is none, when it or
 * an ancestor carries data-svc-no-capture, or when it is a sensitive field.
 */
export function clickEvent(target: ElementLike | null | undefined, options: { captureLinkQueryParams: boolean; redact: Redactor }): { event: string; properties: Properties } | null {
  let actionable: ElementLike | undefined;
  let el = target;
  for (let depth = 0; el && depth < MAX_DEPTH; depth++, el = el.parentElement) {
    if (attr(el, NO_CAPTURE_ATTR) !== null) return null;
    if (!actionable && el.tagName && isActionable(el)) actionable = el;
  }
  if (!actionable || isSensitiveElement(actionable)) return null;
  const t = tag(actionable);
  const properties: Properties = { element_type: t };
  const text = clean(t === 'input' ? (actionable.value ?? attr(actionable, 'value')) : actionable.textContent);
  if (text && !isCardNumber(text) && !isSSN(text)) properties.element_text = text;
  const id = actionable.id || attr(actionable, 'id');
  if (id) properties.element_id = id;
  const cls = clean(attr(actionable, 'class'));
  if (cls) properties.element_class = cls;
  if (t === 'a') {
    const href = actionable.href || attr(actionable, 'href') || '';
    if (/^https?:/i.test(href)) properties.link_url = options.captureLinkQueryParams ? options.redact(href) : (href.split(/[?#]/)[0] ?? '');
    else if (/^[a-z][a-z0-9+.-]*:/i.test(href) && !/^javascript:/i.test(href)) properties.link_url = href.slice(0, href.indexOf(':') + 1);
  }
  const named = clean(attr(actionable, TRACK_ATTR));
  return { event: named || CLICK_EVENT, properties };
}

/**
 * Calls `onChange` after every history.pushState / replaceState, popstate and
 * hashchange (the caller compares URLs, so no-op changes are ignored).
 */
export function watchRoutes(win: WindowLike, onChange: () => void): void {
  const history = win.history;
  const notify = (): void => void win.setTimeout(onChange, 0);
  if (history) {
    for (const name of ['pushState', 'replaceState'] as const) {
      const original = history[name];
      if (typeof original !== 'function') continue;
      (history as HistoryLike)[name] = function (this: unknown, ...args: unknown[]) {
        const result = original.apply(this, args);
        notify();
        return result;
      };
    }
  }
  win.addEventListener('popstate', notify);
  win.addEventListener('hashchange', notify);
}
