import { createClient } from './client';
import type { SvcClient } from './types';

export type {
  BannerConfig,
  BannerControls,
  BatchResult,
  Callback,
  ConsentApi,
  ConsentPurpose,
  EventContext,
  EventType,
  PageContext,
  Properties,
  ReferrerEntry,
  SessionContext,
  SvcClient,
  SvcConfig,
  SvcError,
  SvcErrorCode,
  SvcEvent,
  SvcPlugin,
  Traits,
} from './types';
export { SENSITIVE_PARAMS } from './redaction';
export { CLICK_IDS } from './campaign';
export { VERSION } from './version';

/** The library's singleton client. */
export const svc: SvcClient = /* @__PURE__ */ createClient();
export default svc;
