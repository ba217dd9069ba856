/**
 * The engine pool's waiting work, one first-in-first-out queue per account, taken in turn (round
 * robin): an account that queued a hundred queries waits behind its own, never in front of another
 * account's first. Work without an account (the worker's tasks) is one queue of its own, taken in
 * the same turn. Whether an account's next work may be taken now is the caller's (`mayRun`: its
 * account under its running bound, or the work of a request that already holds a place).
 * Pure: unit-tested (./account-queues.test.ts).
 */
export class AccountQueues<Work> {
  /** Insertion order is the turn: the account served last moves to the end. */
  private readonly queues = new Map<string, Work[]>();
  private count = 0;

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
    for (const [account, queue] of this.queues) {
      if (!mayRun(account, queue[0]!)) continue;
      const work = queue.shift()!;
      this.count--;
      // To the end of the turn (or gone, with nothing left).
      this.queues.delete(account);
      if (queue.length > 0) this.queues.set(account, queue);
      return { account, work };
    }
    return undefined;
  }

  /** Every waiting work, taken out (the pool's shutdown). */
  drain(): Work[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    this.count = 0;
    return all;
  }
}
