import type { IncomingMessage } from "node:http";
import type { QueryResultRow } from "pg";
import { sqlQuery, type SqlRunner } from "../db/client";
import { AppError } from "../errors";
import type { ApiKeyPermission } from "../keys/permissions";
import { countKeyUse } from "../keys/usage";
import {
  isKeyRefusal,
  presentedKey,
  queryWithKey,
  verifyKey,
  type AuthenticatedKey,
  type PresentedKey,
} from "../keys/verify";
import { annotateRequest } from "../observability";
import { authFailures } from "../ratelimit/auth-failures";
import {
  DATASETS_POLICY,
  enforceRatePolicy,
  refundRatePolicy,
  socialPolicy,
  type RatePolicy,
} from "../ratelimit/policies";
import { socialAccessFor, type SocialAccessSettings } from "../social/access";
import { clientIp } from "./client-ip";

/** A surface's own error answer (problem+json for /api/v1, the protocol's for Delta Sharing). */
export type ErrorRenderer = (error: unknown, requestId: string, headers: Record<string, string>) => Response;

export type KeyedContext = {
  key: AuthenticatedKey;
  /**
   * Runs a read. With `keyInFirstRead`, the first one also checks the key, in the same statement
   * (see KeyInFirstRead); later ones, and every one elsewhere, run alone.
   */
  sql: SqlRunner;
  /** The account's Social API settings, for `scrape:read` keys (checked to be enabled). */
  social?: SocialAccessSettings;
};

export type KeyedRequest = {
  incoming: IncomingMessage;
  requestId: string;
  permission: ApiKeyPermission;
  /** Who needs the permission, for the refusal: "This endpoint", "Delta Sharing". */
  surface: string;
  keyInFirstRead?: boolean;
  renderError: ErrorRenderer;
  handle: (context: KeyedContext) => Promise<Response>;
};

/**
 * THE keyed-request pipeline of /api/v1 (lib/api/pipeline.ts) and /api/delta-sharing
 * (lib/sharing/dispatch.ts): key lookup (expiry, revocation), failed authentications counted
 * against the client's address (lib/ratelimit/auth-failures.ts), permission, Social API access
 * (scrape:read keys), the account's rate limit and its headers, the request id header, usage
 * counted per key, and every error through the surface's renderer, unexpected ones included.
 * Requests refused before the rate limit (401, 403) count against no account. Dataset keys share
 * the account's 60/minute across both surfaces; social keys have the account's own rate. A query
 * refused as too_many_queries (the account's place in the data engine is full) is not counted.
 */
export async function keyedRequest(request: KeyedRequest): Promise<Response> {
  const { incoming, requestId } = request;
  const state = new RequestState();
  try {
    const response = await authFailures().authenticate(clientIp(incoming), async () => {
      const now = new Date();
      const presented = presentedKey(incoming.headers.authorization ?? null);
      const known = presented.known;
      const firstRead =
        request.keyInFirstRead === true && known?.permission === request.permission
          ? new KeyInFirstRead(presented, known, now, state)
          : undefined;
      const key = firstRead ? firstRead.key : await verifyKey(presented, now);
      state.keyId = key.keyId;
      annotateRequest(incoming, { buyerId: key.buyerId });
      try {
        const response = await checkedRequest(request, key, firstRead?.sql ?? sqlQuery, state);
        await firstRead?.settle();
        return response;
      } catch (error) {
        // The key's own refusal comes first, as when it is checked before anything else.
        await firstRead?.settle();
        throw error;
      }
    });
    for (const [name, value] of Object.entries(state.limitHeaders)) response.headers.set(name, value);
    response.headers.set("X-Request-Id", requestId);
    countKeyUse(state.keyId!, response.status);
    return response;
  } catch (error) {
    const response = request.renderError(error, requestId, state.limitHeaders);
    // Answers to a known key count toward its usage, refusals included; an unknown key has none.
    if (state.keyId) countKeyUse(state.keyId, response.status);
    return response;
  }
}

/** What a request has learnt so far: its key, and its account's rate limit headers. */
class RequestState {
  keyId?: string;
  limitHeaders: Record<string, string> = {};
  /** A key refused after all is answered as if refused first: no usage, no account limit headers. */
  refused(error: unknown): never {
    this.keyId = undefined;
    this.limitHeaders = {};
    throw error;
  }
}

async function checkedRequest(
  request: KeyedRequest,
  key: AuthenticatedKey,
  sql: SqlRunner,
  state: RequestState,
): Promise<Response> {
  if (key.permission !== request.permission) {
    throw new AppError(
      "insufficient_permission",
      `${request.surface} needs a key with the ${request.permission} permission; this key has ${key.permission}.`,
    );
  }
  let policy: RatePolicy = DATASETS_POLICY;
  let social: SocialAccessSettings | undefined;
  if (key.permission === "scrape:read") {
    social = await socialAccessFor(key.buyerId);
    if (!social?.enabled) {
      throw new AppError(
        "social_access_disabled",
        "Social API access is not enabled for this account. Ask your account manager to enable it.",
      );
    }
    policy = socialPolicy(social.ratePerMinute);
  }
  state.limitHeaders = await enforceRatePolicy(policy, key.buyerId);
  try {
    return await request.handle({ key, sql, social });
  } catch (error) {
    if (error instanceof AppError && error.code === "too_many_queries") {
      await refundRatePolicy(policy, key.buyerId);
      state.limitHeaders = {};
    }
    throw error;
  }
}

/**
 * `keyInFirstRead`: the handler's first database work is a read through `sql`, and it writes
 * nothing before. A key this process accepted before (its owner and permission never change) is
 * then rate limited at once and checked in that read's statement (lib/keys/verify.ts
 * queryWithKey): one round trip per request, not two. Its validity is never taken from memory: a
 * key refused there gets its 401, and so does one whose handler failed or read nothing before its
 * statement (settle), as if it had been checked first. Such a request, from a key revoked since
 * its last one, counts once against its account's limit; the process then forgets the key.
 */
export class KeyInFirstRead {
  #unchecked = true;

  constructor(
    private readonly presented: PresentedKey,
    readonly key: AuthenticatedKey,
    private readonly now: Date,
    private readonly state: RequestState,
  ) {}

  /** Reads; the first read also checks the key. */
  readonly sql: SqlRunner = async <Row extends QueryResultRow>(text: string, values: unknown[]) => {
    if (!this.#unchecked) return sqlQuery<Row>(text, values);
    this.#unchecked = false;
    try {
      return await queryWithKey<Row>({ ...this.presented, known: this.key }, text, values, this.now);
    } catch (error) {
      return isKeyRefusal(error) ? this.state.refused(error) : Promise.reject(error);
    }
  };

  /** Checks the key now if no read did. */
  async settle(): Promise<void> {
    if (!this.#unchecked) return;
    this.#unchecked = false;
    await verifyKey(this.presented, this.now).catch((error: unknown) => this.state.refused(error));
  }
}
