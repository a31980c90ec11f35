import { isRecord, post, rawBodyText, retryOutcome, type HttpOptions, type PlatformResponse } from './http';
import type { DeliveryOutcome } from './types';

export const GOOGLE_OAUTH_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** Refresh this long before Google's expiry, so a token never lapses between fetching it and Google checking it. */
export const TOKEN_REFRESH_MARGIN_MS = 60_000;

export interface OAuthClientCredentials {
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  tokenUrl: string;
}

export type AccessTokenResult = { ok: true; token: string } | { ok: false; outcome: DeliveryOutcome };

export interface AccessTokenSource {
  /** A cached token while it is fresh, else a new one from the refresh token. */
  get(): Promise<AccessTokenResult>;
  /** Drops the cached token (the API refused it), so the next get() refreshes. */
  invalidate(): void;
  /** Access tokens this source handed out and may still see echoed, for redaction. */
  issuedTokens(): string[];
}

interface CachedToken {
  token: string;
  refreshAtMs: number;
}

export function createAccessTokenSource(credentials: OAuthClientCredentials, http: HttpOptions, now: () => number): AccessTokenSource {
  let cached: CachedToken | undefined;
  let previousToken: string | undefined;
  // Concurrent sends share one refresh instead of each spending a token request.
  let inFlight: Promise<AccessTokenResult> | undefined;

  async function refresh(): Promise<AccessTokenResult> {
    const result = await post(
      credentials.tokenUrl,
      {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: credentials.clientId,
          client_secret: credentials.clientSecret,
          refresh_token: credentials.refreshToken,
        }).toString(),
      },
      http,
    );
    if (result.kind === 'unreachable') return { ok: false, outcome: retryOutcome(null, `Google OAuth token endpoint: ${result.error}`) };
    const { response } = result;
    const granted = grantedToken(response.body);
    if (response.status === 200 && granted) {
      if (cached) previousToken = cached.token;
      cached = { token: granted.token, refreshAtMs: now() + granted.expiresInMs - TOKEN_REFRESH_MARGIN_MS };
      return { ok: true, token: granted.token };
    }
    return { ok: false, outcome: tokenFailure(response) };
  }

  return {
    async get() {
      if (cached && now() < cached.refreshAtMs) return { ok: true, token: cached.token };
      inFlight ??= refresh().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    invalidate() {
      if (cached) previousToken = cached.token;
      cached = undefined;
    },
    issuedTokens() {
      return [cached?.token, previousToken].filter((t): t is string => t !== undefined);
    },
  };
}

function grantedToken(body: unknown): { token: string; expiresInMs: number } | undefined {
  if (!isRecord(body) || typeof body.access_token !== 'string' || body.access_token === '') return undefined;
  // Without a stated lifetime the token is used once and not cached.
  const expiresInS = typeof body.expires_in === 'number' ? body.expires_in : 0;
  return { token: body.access_token, expiresInMs: expiresInS * 1000 };
}

/**
 * 4xx (invalid_grant: the refresh token was revoked or expired; invalid_client)
 * will not heal by waiting: the connector needs re-authorising, so it fails.
 * 429, 5xx and a 200 without a token are Google's side: retried.
 */
function tokenFailure(response: PlatformResponse): DeliveryOutcome {
  const { status, body } = response;
  const reason = oauthErrorText(body) ?? rawBodyText(status, body);
  if (status >= 400 && status < 500 && status !== 429) {
    return {
      kind: 'failed',
      status,
      error: `Google OAuth refused the refresh token (${reason}); re-authorise the Google Ads connection`,
      clickUnusable: false,
    };
  }
  return retryOutcome(status, `Google OAuth token endpoint: ${reason}`, response.retryAfterMs);
}

function oauthErrorText(body: unknown): string | undefined {
  if (!isRecord(body) || typeof body.error !== 'string') return undefined;
  return typeof body.error_description === 'string' ? `${body.error}: ${body.error_description}` : body.error;
}
