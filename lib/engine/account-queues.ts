/**
 * The engine pool's waiting work, one first-in-first-out queue per account, taken in turn (round
 * robin): the next work is the first of the account served longest ago (one never served first),
 * so an account that queued a hundred queries waits behind its own, never in front of another
 * account's first, even one that arrived after it. Work without an account (the worker's tasks) is
 * one queue of its own, taken in the same turn. Whether an account's next work may be taken now is the caller's (`mayRun`: its
 * account under its running bound, or the work of a request that already holds a place).
 * Pure: unit-tested (./account-queues.test.ts).
 */
/** Accounts whose last turn is remembered beyond those with work waiting (a few kilobytes). */
const REMEMBERED_ACCOUNTS = 1_000;

export class AccountQueues<Work> {
  private readonly queues = new Map<string, Work[]>();
  private count = 0;
  /** When each account was last served (a turn number), oldest first; at most REMEMBERED_ACCOUNTS without a queue. */
  private readonly lastServed = new Map<string, number>();
  private turn = 0;

  get size(): number {
    return this.count;
  }

  /** How many of `account`'s works wait. */
  waitingFor(account: string): number {
    return this.queues.get(account)?.length ?? 0;
  }

  push(account: string, work: Work): void {
    const queue = this.queues.get(account);
    if (queue) queue.push(work);
    else this.queues.set(account, [work]);
    this.count++;
  }

  /** Back at the head of its account's queue (a task run again after its process was ended from outside). */
  unshift(account: string, work: Work): void {
    const queue = this.queues.get(account);
    if (queue) queue.unshift(work);
    else this.queues.set(account, [work]);
    this.count++;
  }

  /** Takes a waiting work out (its client left); whether it was waiting. */
  remove(account: string, work: Work): boolean {
    const queue = this.queues.get(account);
    const index = queue?.indexOf(work) ?? -1;
    if (!queue || index < 0) return false;
    queue.splice(index, 1);
    if (queue.length === 0) this.queues.delete(account);
    this.count--;
    return true;
  }

  /** The next work in turn among the accounts `mayRun` allows, taken out of its queue. */
  takeNext(mayRun: (account: string, work: Work) => boolean): { account: string; work: Work } | undefined {
    let next: string | undefined;
    let servedAt = Infinity;
    // Ties (accounts never served) in the order their queues were made.
    for (const [account, queue] of this.queues) {
      const served = this.lastServed.get(account) ?? -1;
      if (served < servedAt && mayRun(account, queue[0]!)) [next, servedAt] = [account, served];
    }
    if (next === undefined) return undefined;
    const queue = this.queues.get(next)!;
    const work = queue.shift()!;
    this.count--;
    if (queue.length === 0) this.queues.delete(next);
    this.served(next);
    return { account: next, work };
  }

  private served(account: string): void {
    this.lastServed.delete(account);
    this.lastServed.set(account, ++this.turn);
    // The oldest turns of accounts with nothing waiting are forgotten first: such an account is taken as never served.
    for (const [known] of this.lastServed) {
      if (this.lastServed.size <= REMEMBERED_ACCOUNTS) break;
      if (!this.queues.has(known)) this.lastServed.delete(known);
    }
  }

  /** Every waiting work, taken out (the pool's shutdown). */
  drain(): Work[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    this.count = 0;
    return all;
  }
}
