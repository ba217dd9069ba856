import type { Metadata } from "next";
import Link from "next/link";
import { Badge, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { UsageChart } from "@/components/usage-chart";
import { formatDate, formatDay, formatRelative } from "@/lib/format";
import { API_KEY_EXPIRY_DAYS, EXPIRES_SOON_DAYS, listApiKeys, type ApiKeyStatus } from "@/lib/keys";
import { USAGE_RETENTION_DAYS, emptyUsageDays, usageByKey } from "@/lib/keys/usage";
import { socialAccessFor } from "@/lib/social/access";
import { SocialAccessSummary } from "./social-access";
import { CreateKeyButton, ReplaceKeyButton, RevokeKeyButton } from "./key-actions";

export const metadata: Metadata = { title: "API keys" };

const STATUS: Record<ApiKeyStatus, { label: string; tone: "green" | "amber" | "red" | "slate" }> = {
  active: { label: "Active", tone: "green" },
  expires_soon: { label: "Expires soon", tone: "amber" },
  expired: { label: "Expired", tone: "red" },
  revoked: { label: "Revoked", tone: "slate" },
};

export default async function KeysPage() {
  const buyer = await requireBuyer("/keys");
  const now = new Date();
  const [keys, social, usage] = await Promise.all([
    listApiKeys(buyer.id, now),
    socialAccessFor(buyer.id),
    usageByKey(buyer.id, 30, now),
  ]);
  const socialEnabled = social?.enabled ?? false;
  return (
    <div className="space-y-6">
      <header className="flex flex-wrap items-end justify-between gap-4">
        <div className="space-y-2">
          <h1 id="keys-heading" tabIndex={-1} className="text-2xl font-bold tracking-tight focus:outline-none">
            API keys
          </h1>
          <p className="max-w-2xl text-slate-600">
            Keys let your backend call the API. Use one key per integration, keep it on your server, and replace it
            before it expires. See{" "}
            <Link href="/getting-started" className={linkClass}>
              getting started
            </Link>
            .
          </p>
        </div>
        <CreateKeyButton socialEnabled={socialEnabled} expiryChoices={[...API_KEY_EXPIRY_DAYS]} />
      </header>

      {keys.length === 0 ? (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
          No keys yet. Create one to call the API.
        </p>
      ) : (
        <>
          {/* Phones: one card per key, everything including the actions in view. */}
          <ul className="space-y-3 md:hidden" aria-label="Your API keys, newest first">
            {keys.map((key) => (
              <li
                key={key.id}
                className="space-y-3 rounded-lg border border-slate-200 bg-white p-4 text-sm"
                data-testid="key-card"
                data-key-id={key.id}
              >
                <div className="flex items-start justify-between gap-2">
                  <h2 className="font-medium break-words">{key.name}</h2>
                  <Badge tone={STATUS[key.status].tone}>{STATUS[key.status].label}</Badge>
                </div>
                {key.retiresAt && <RetiresAt at={key.retiresAt} />}
                <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-1 text-slate-700">
                  <dt className="text-slate-500">Key</dt>
                  <dd className="font-mono text-xs break-all">{key.display}</dd>
                  <dt className="text-slate-500">Permission</dt>
                  <dd className="font-mono text-xs">{key.permission}</dd>
                  <dt className="text-slate-500">Expires</dt>
                  <dd>
                    <time dateTime={key.expiresAt.toISOString()}>{formatDay(key.expiresAt)}</time>
                  </dd>
                  <dt className="text-slate-500">Last used</dt>
                  <dd>
                    <LastUsed at={key.lastUsedAt} now={now} />
                  </dd>
                </dl>
                <div className="flex flex-wrap gap-2">
                  <KeyActions
                    keyId={key.id}
                    name={key.name}
                    revoked={key.status === "revoked"}
                    retiring={!!key.retiresAt}
                  />
                </div>
              </li>
            ))}
          </ul>
          <div className="hidden overflow-x-auto rounded-lg border border-slate-200 bg-white md:block">
            <table className="min-w-full divide-y divide-slate-200 text-sm">
              <caption className="sr-only">Your API keys, newest first</caption>
              <thead className="bg-slate-50 text-left text-xs font-semibold tracking-wide text-slate-600 uppercase">
                <tr>
                  <th scope="col" className="px-4 py-3">
                    Name
                  </th>
                  <th scope="col" className="px-4 py-3">
                    Key
                  </th>
                  <th scope="col" className="px-4 py-3">
                    Permission
                  </th>
                  <th scope="col" className="px-4 py-3">
                    Created
                  </th>
                  <th scope="col" className="px-4 py-3">
                    Expires
                  </th>
                  <th scope="col" className="px-4 py-3">
                    Last used
                  </th>
                  <th scope="col" className="px-4 py-3">
                    Status
                  </th>
                  <th scope="col" className="px-4 py-3">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody className="divide-y divide-slate-100">
                {keys.map((key) => (
                  <tr key={key.id} data-testid="key-row" data-key-id={key.id}>
                    <th scope="row" className="px-4 py-3 text-left font-medium">
                      {key.name}
                    </th>
                    <td className="px-4 py-3 font-mono text-xs whitespace-nowrap">{key.display}</td>
                    <td className="px-4 py-3 font-mono text-xs">{key.permission}</td>
                    <td className="px-4 py-3 whitespace-nowrap">
                      <time dateTime={key.createdAt.toISOString()} title={formatDate(key.createdAt)}>
                        {formatDay(key.createdAt)}
                      </time>
                    </td>
                    <td className="px-4 py-3 whitespace-nowrap">
                      <time dateTime={key.expiresAt.toISOString()} title={formatDate(key.expiresAt)}>
                        {formatDay(key.expiresAt)}
                      </time>
                    </td>
                    <td className="px-4 py-3 whitespace-nowrap">
                      <LastUsed at={key.lastUsedAt} now={now} />
                    </td>
                    <td className="px-4 py-3" data-testid="key-status">
                      <Badge tone={STATUS[key.status].tone}>{STATUS[key.status].label}</Badge>
                      {key.retiresAt && <RetiresAt at={key.retiresAt} />}
                    </td>
                    <td className="px-4 py-3">
                      <div className="flex justify-end gap-2">
                        <KeyActions
                          keyId={key.id}
                          name={key.name}
                          revoked={key.status === "revoked"}
                          retiring={!!key.retiresAt}
                        />
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {keys.length > 0 && (
        <section aria-labelledby="usage-heading" className="space-y-3">
          <h2 id="usage-heading" className="text-lg font-semibold">
            Usage
          </h2>
          <p className="text-sm text-slate-600">
            Answers of the API per key over the last 30 days (UTC), by outcome. Counts reach this page within seconds.
          </p>
          <ul className="grid gap-4 md:grid-cols-2">
            {keys.map((key) => {
              const keyUsage = usage.get(key.id);
              const days = keyUsage?.days ?? emptyUsageDays(now);
              return (
                <li
                  key={key.id}
                  className="space-y-2 rounded-lg border border-slate-200 bg-white p-4"
                  data-testid="key-usage"
                  data-key-id={key.id}
                >
                  <div className="flex flex-wrap items-baseline justify-between gap-2">
                    <h3 className="font-medium">{key.name}</h3>
                    <p className="text-sm text-slate-600">
                      <span data-testid="requests-24h">{(keyUsage?.last24Hours ?? 0).toLocaleString("en")}</span>{" "}
                      requests in the last 24 hours
                    </p>
                  </div>
                  <UsageChart days={days} label={`Usage of ${key.name}`} />
                </li>
              );
            })}
          </ul>
        </section>
      )}
      <SocialAccessSummary buyerId={buyer.id} access={social} />
      <p className="text-xs text-slate-500">
        “Expires soon” means within {EXPIRES_SOON_DAYS} days. Revoking takes effect on the next request. Last use is
        recorded to the minute; usage is kept {USAGE_RETENTION_DAYS} days.
      </p>
    </div>
  );
}

/** When a key was last used, relative, with the exact time on hover. */
function LastUsed({ at, now }: { at: Date | null; now: Date }) {
  if (!at) return <>Never</>;
  return (
    <time dateTime={at.toISOString()} title={formatDate(at)}>
      {formatRelative(at, now)}
    </time>
  );
}

/**
 * A retiring key has its replacement already (replacing it again would only add a key): revoke is
 * what is left. A revoked key has no actions: it was stopped on purpose, and "Create key" makes a new one.
 */
function KeyActions({
  keyId,
  name,
  revoked,
  retiring,
}: {
  keyId: string;
  name: string;
  revoked: boolean;
  retiring: boolean;
}) {
  return (
    <>
      <ReplaceKeyButton
        keyId={keyId}
        name={name}
        expiryChoices={[...API_KEY_EXPIRY_DAYS]}
        canRevokeOld={!revoked}
        canReplace={!retiring && !revoked}
      />
      {!revoked && <RevokeKeyButton keyId={keyId} name={name} />}
    </>
  );
}

/** A replaced key still in its overlap: when it stops working. */
function RetiresAt({ at }: { at: Date }) {
  return (
    <p className="mt-1 text-xs text-amber-800" data-testid="key-retires-at">
      retires at <time dateTime={at.toISOString()}>{formatDate(at)}</time>
    </p>
  );
}
