import type { NavigatorLike, WindowLike } from './dom';
import type { Redactor } from './redaction';
import type { EventContext, PageContext } from './types';

interface NameVersion {
  name?: string;
  version?: string;
}

const BROWSERS: Array<[RegExp, string]> = [
  [/Edg(?:e|A|iOS)?\/([\d.]+)/, 'Edge'],
  [/OPR\/([\d.]+)/, 'Opera'],
  [/SamsungBrowser\/([\d.]+)/, 'Samsung Internet'],
  [/(?:Firefox|FxiOS)\/([\d.]+)/, 'Firefox'],
  [/HeadlessChrome\/([\d.]+)/, 'Chrome Headless'],
  [/(?:Chrome|CriOS)\/([\d.]+)/, 'Chrome'],
  [/Version\/([\d.]+).*Safari\//, 'Safari'],
];

const SYSTEMS: Array<[RegExp, string]> = [
  [/Windows NT ([\d.]+)/, 'Windows'],
  [/(?:iPhone|iPad|iPod).*? OS ([\d_]+)/, 'iOS'],
  [/Mac OS X ([\d_.]+)/, 'macOS'],
  [/Android ([\d.]+)/, 'Android'],
  [/CrOS/, 'ChromeOS'],
  [/Linux/, 'Linux'],
];

const WINDOWS: Record<string, string> = { '10.0': '10', '6.3': '8.1', '6.2': '8', '6.1': '7' };

const first = (ua: string, table: Array<[RegExp, string]>): NameVersion => {
  for (const [pattern, name] of table) {
    const m = pattern.exec(ua);
    if (m) return m[1] ? { name, version: m[1].replace(/_/g, '.') } : { name };
  }
  return {};
};

/** Browser, operating system and device class read from a User-Agent string (and client hints when present). */
export function parseUserAgent(ua: string, mobileHint?: boolean): Pick<EventContext, 'browser' | 'os' | 'device'> {
  const os = first(ua, SYSTEMS);
  if (os.name === 'Windows' && os.version) os.version = WINDOWS[os.version] ?? os.version;
  const android = /Android/.test(ua);
  const type = /iPad|Tablet/.test(ua) || (android && !/Mobile/.test(ua)) ? 'tablet' : mobileHint || /Mobi|iPhone|iPod|Android/.test(ua) ? 'mobile' : 'desktop';
  const apple = /(iPhone|iPad|iPod|Macintosh)/.exec(ua)?.[1];
  const androidModel = android ? /Android[^;)]*;\s*([^;)]+?)(?:\sBuild\/|\))/.exec(ua)?.[1] : undefined;
  const device: NonNullable<EventContext['device']> = { type };
  if (apple) {
    device.manufacturer = 'Apple';
    device.model = apple === 'Macintosh' ? 'Mac' : apple;
  } else if (androidModel && androidModel !== 'K') device.model = androidModel;
  return { browser: first(ua, BROWSERS), os, device };
}

/** The page part of the context: the current document, with sensitive URL values redacted. */
export function pageContext(win: WindowLike, redact: Redactor, referrer: string): PageContext {
  const loc = win.location;
  const doc = win.document;
  const page: PageContext = {
    url: redact(loc?.href ?? ''),
    path: loc?.pathname ?? '',
    title: doc?.title ?? '',
    referrer: redact(referrer),
    search: redact(loc?.search ?? ''),
    hash: redact(loc?.hash ?? ''),
  };
  const lang = doc?.documentElement?.lang;
  if (lang) page.language = lang;
  return page;
}

/** Context parts that do not change during a page's life. */
export function staticContext(nav: NavigatorLike | undefined, now: number): EventContext {
  const ua = nav?.userAgent ?? '';
  const ctx: EventContext = { ...parseUserAgent(ua, nav?.userAgentData?.mobile), user_agent: ua };
  const hints = nav?.userAgentData;
  if (hints && ctx.device) ctx.device.uaClientHints = { brands: hints.brands, mobile: hints.mobile, platform: hints.platform };
  if (nav?.language) ctx.locale = nav.language;
  try {
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (tz) ctx.timezone = tz;
  } catch {
    // no Intl time zone support
  }
  // minutes east of UTC, the sign ISO 8601 offsets use (+330 for India)
  ctx.timezone_offset_mins = -new Date(now).getTimezoneOffset();
  return ctx;
}

/** Screen and network parts, read per event (the viewport and connectivity change). */
export function liveContext(win: WindowLike): Pick<EventContext, 'screen' | 'network'> {
  const scr = win.screen;
  const nav = win.navigator;
  const conn = nav?.connection;
  const network: NonNullable<EventContext['network']> = {};
  if (typeof nav?.onLine === 'boolean') network.online = nav.onLine;
  if (conn?.type) {
    network.wifi = conn.type === 'wifi';
    network.cellular = conn.type === 'cellular';
  }
  if (typeof conn?.saveData === 'boolean') network.saveData = conn.saveData;
  return {
    screen: {
      width: scr?.width,
      height: scr?.height,
      density: win.devicePixelRatio,
      viewport: { innerWidth: win.innerWidth, innerHeight: win.innerHeight },
    },
    network,
  };
}
