import type { Metadata } from "next";
import Link from "next/link";
import { Badge, linkClass } from "@/components/ui";
import { requireBuyer } from "@/lib/auth/session";
import { formatDate, formatDay } from "@/lib/format";
import { API_KEY_EXPIRY_DAYS, EXPIRES_SOON_DAYS, listApiKeys, type ApiKeyStatus } from "@/lib/keys";
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
  const [keys, social] = await Promise.all([listApiKeys(buyer.id), socialAccessFor(buyer.id)]);
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
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
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
                  <td className="px-4 py-3 whitespace-nowrap">{formatDate(key.lastUsedAt, "Never")}</td>
                  <td className="px-4 py-3" data-testid="key-status">
                    <Badge tone={STATUS[key.status].tone}>{STATUS[key.status].label}</Badge>
                  </td>
                  <td className="px-4 py-3">
                    <div className="flex justify-end gap-2">
                      <ReplaceKeyButton
                        keyId={key.id}
                        name={key.name}
                        expiryChoices={[...API_KEY_EXPIRY_DAYS]}
                        canRevokeOld={key.status !== "revoked"}
                      />
                      {key.status !== "revoked" && <RevokeKeyButton keyId={key.id} name={key.name} />}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <SocialAccessSummary buyerId={buyer.id} access={social} />
      <p className="text-xs text-slate-500">
        “Expires soon” means within {EXPIRES_SOON_DAYS} days. Revoking takes effect on the next request. Last use is
        recorded to the minute.
      </p>
    </div>
  );
}
