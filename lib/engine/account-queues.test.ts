import { describe, expect, it } from "vitest";
import { AccountQueues } from "./account-queues";

const takeAll = (queues: AccountQueues<string>, mayRun: (account: string) => boolean = () => true) => {
  const taken: string[] = [];
  for (let next = queues.takeNext(mayRun); next; next = queues.takeNext(mayRun)) taken.push(next.work);
  return taken;
};

describe("AccountQueues", () => {
  it("takes accounts in turn, each account's work in its own order", () => {
    const queues = new AccountQueues<string>();
    for (let i = 1; i <= 4; i++) queues.push("flood", `flood-${i}`);
    queues.push("other", "other-1");
    queues.push("third", "third-1");
    queues.push("other", "other-2");
    expect(queues.size).toBe(7);
    expect(takeAll(queues)).toEqual(["flood-1", "other-1", "third-1", "flood-2", "other-2", "flood-3", "flood-4"]);
    expect(queues.size).toBe(0);
  });

  it("passes over an account that may not run now and keeps its place", () => {
    const queues = new AccountQueues<string>();
    queues.push("busy", "busy-1");
    queues.push("free", "free-1");
    queues.push("free", "free-2");
    expect(takeAll(queues, (account) => account !== "busy")).toEqual(["free-1", "free-2"]);
    expect(queues.waitingFor("busy")).toBe(1);
    expect(queues.takeNext(() => true)?.work).toBe("busy-1");
  });

  it("takes an account never served before one served, though it came later", () => {
    const queues = new AccountQueues<string>();
    queues.push("flood", "flood-1");
    expect(queues.takeNext(() => true)?.work).toBe("flood-1");
    // The flood queues again while its first runs, then another account's first arrives.
    queues.push("flood", "flood-2");
    queues.push("flood", "flood-3");
    queues.push("late", "late-1");
    expect(takeAll(queues)).toEqual(["late-1", "flood-2", "flood-3"]);
  });

  it("forgets the turns of accounts with nothing waiting past a thousand, oldest first", () => {
    const queues = new AccountQueues<string>();
    for (let i = 0; i < 1_005; i++) {
      queues.push(`a${i}`, `a${i}`);
      queues.takeNext(() => true);
    }
    // a0's turn is forgotten (never served, so first); a1004's is not.
    queues.push("a1004", "again-1004");
    queues.push("a0", "again-0");
    expect(takeAll(queues)).toEqual(["again-0", "again-1004"]);
  });

  it("removes a waiting work whose client left, and only once", () => {
    const queues = new AccountQueues<string>();
    queues.push("a", "a-1");
    queues.push("a", "a-2");
    expect(queues.remove("a", "a-1")).toBe(true);
    expect(queues.remove("a", "a-1")).toBe(false);
    expect(queues.waitingFor("a")).toBe(1);
    expect(queues.remove("a", "a-2")).toBe(true);
    expect(queues.size).toBe(0);
    expect(queues.takeNext(() => true)).toBeUndefined();
  });

  it("puts work run again at the head of its account's queue", () => {
    const queues = new AccountQueues<string>();
    queues.push("a", "a-2");
    queues.unshift("a", "a-1");
    expect(takeAll(queues)).toEqual(["a-1", "a-2"]);
  });

  it("drains every queue", () => {
    const queues = new AccountQueues<string>();
    queues.push("a", "a-1");
    queues.push("b", "b-1");
    expect(queues.drain().sort()).toEqual(["a-1", "b-1"]);
    expect(queues.size).toBe(0);
  });
});
