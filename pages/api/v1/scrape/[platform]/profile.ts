import { apiJson } from "@/lib/api/responses";
import { apiRoute } from "@/lib/api/route";
import { parseQuery } from "@/lib/api/validation";
import { now } from "@/lib/clock";
import { socialProfileQuerySchema } from "@/lib/schemas/api";
import { allowanceHeaders, parsePlatform, readSocialProfile } from "@/lib/social/profiles";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

/** A stored social profile, for scrape:read keys of accounts with Social API access. */
export default apiRoute<{ platform: string }>(
  { permission: "scrape:read" },
  async ({ request, key, params, social }) => {
    // The platform first: an unknown one is a 404 whatever the query says.
    const platform = parsePlatform(params.platform);
    const { handle } = parseQuery(socialProfileQuerySchema, request);
    const { body, allowance } = await readSocialProfile({
      buyerId: key.buyerId,
      allowance: social!.monthlyAllowance,
      platform,
      handle,
      consume: request.method !== "HEAD",
      now: now(),
    });
    const response = apiJson(JSON.stringify(body));
    for (const [name, value] of Object.entries(allowanceHeaders(allowance))) response.headers.set(name, value);
    return response;
  },
);
