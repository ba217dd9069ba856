import Link from "next/link";
import { buttonClass } from "@/components/ui";

/** Our own 404 page: Next's default one styles itself inline, which the Content-Security-Policy blocks. */
export default function NotFound() {
  return (
    <div className="mx-auto max-w-md space-y-4" data-testid="not-found">
      <h1 className="text-2xl font-bold tracking-tight">Page not found</h1>
      <p className="text-slate-700">
        There is nothing here, or nothing you can see with this account. Check the address, or go back to your orders.
      </p>
      <Link href="/orders" className={buttonClass("primary")}>
        Your orders
      </Link>
    </div>
  );
}
